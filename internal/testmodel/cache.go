package testmodel

import "strings"

// The prompt cache simulation. An Anthropic request's cache_control
// breakpoints end prefixes of its canonical prompt (tools, system, messages,
// in the API's cache order, without the cache_control marks themselves).
// As the API does, the longest prefix ending at any block boundary up to the
// last breakpoint that an earlier request wrote (ended at a breakpoint) is
// read from the cache; the rest up to the last breakpoint is written. With
// SetPromptCache(true), OpenAI and Gemini requests are cached implicitly: the
// longest byte-identical prefix of an earlier request's prompt is read. Tokens
// are bytes over 4, as promptTokens estimates them; there is no minimum
// cacheable length and nothing expires.

// cacheKey is a request's canonical prompt and where its breakpoints end.
type cacheKey struct {
	prompt      string
	breakpoints []int // ascending byte offsets into prompt; nil: implicit caching
	boundaries  []int // where each block ends, ascending
}

type promptCache struct {
	implicit bool
	prefixes map[string]bool // ended at a breakpoint by an earlier request
	prompts  []string        // earlier implicit prompts
}

// SetPromptCache turns implicit prompt caching on or off for the OpenAI and
// Gemini protocols (off by default, so usage stays as existing tests expect):
// a request then reports, as cached tokens, the longest prefix of its
// prompt that an earlier request sent byte for byte.
func (s *Server) SetPromptCache(on bool) {
	s.mu.Lock()
	s.cache.implicit = on
	s.mu.Unlock()
}

// lookup fills c's cache fields and remembers its prefixes; s.mu is held.
func (pc *promptCache) lookup(c *Call) {
	k := c.cache
	if len(k.breakpoints) > 0 {
		if pc.prefixes == nil {
			pc.prefixes = map[string]bool{}
		}
		read := 0
		last := k.breakpoints[len(k.breakpoints)-1]
		for _, b := range k.boundaries {
			if b <= last && pc.prefixes[k.prompt[:b]] {
				read = b
			}
		}
		c.CacheReadTokens, c.CacheWriteTokens = read/4, (last-read)/4
		for _, b := range k.breakpoints {
			pc.prefixes[k.prompt[:b]] = true
		}
		return
	}
	if !pc.implicit || k.prompt == "" {
		return
	}
	best := 0
	for _, p := range pc.prompts {
		best = max(best, commonPrefix(p, k.prompt))
	}
	pc.prompts = append(pc.prompts, k.prompt)
	c.CacheReadTokens = best / 4
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// implicitKey is the canonical prompt of an OpenAI or Gemini request: its
// messages' text, the bytes the prompt's token estimate counts, so that the
// cached tokens never exceed the prompt's.
func implicitKey(msgs []Message) cacheKey {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Content)
	}
	return cacheKey{prompt: b.String()}
}

// cachedUsage splits prompt tokens into plain input, cache reads and cache
// writes, so that the three never add up to more than the prompt.
func cachedUsage(prompt int, c Call) (input, read, write int) {
	read = min(c.CacheReadTokens, prompt)
	write = min(c.CacheWriteTokens, prompt-read)
	return prompt - read - write, read, write
}
