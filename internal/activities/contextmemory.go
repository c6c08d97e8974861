package activities

import (
	"fmt"
	"sync"

	"github.com/agenttask/agenttask/contract"
)

// contextMemory remembers, per model and room kept for the answer, the
// largest request (in the window's tokens) the provider took after refusing
// one as over the model's context, and the smallest it refused. A later
// turn then starts near the provider's real limit instead of being refused
// and shrunk again every turn: it tries midway between the two, so each
// turn learns (at most one refusal a turn), until they are within a
// sixteenth, after which it sends what was taken. The memory is the
// worker's own (a new worker learns again) and changes no workflow state.
type contextMemory struct {
	mu   sync.Mutex
	seen map[string]contextSeen
}

type contextSeen struct{ taken, refused int }

// maxContextMemory bounds the models remembered (the map starts afresh).
const maxContextMemory = 256

func contextKey(s contract.AgentSpec) string {
	return fmt.Sprintf("%s|%d|%d", s.Model, s.MaxTokens, s.ContextTokens)
}

// limit is the token limit a request starts with: at most static (what the
// agent's settings allow).
func (c *contextMemory) limit(key string, static int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.seen[key]
	if s.refused == 0 {
		return static
	}
	try := s.refused / 2
	switch {
	case s.taken > 0 && s.refused-s.taken <= s.refused/16:
		try = s.taken
	case s.taken > 0:
		try = (s.taken + s.refused) / 2
	}
	return max(1, min(static, try))
}

func (c *contextMemory) refusedAt(key string, tokens int) {
	c.update(key, func(s *contextSeen) {
		if s.refused == 0 || tokens < s.refused {
			s.refused = tokens
		}
		if s.taken >= s.refused {
			s.taken = 0 // the provider's limit went down
		}
	})
}

func (c *contextMemory) takenAt(key string, tokens int) {
	c.update(key, func(s *contextSeen) {
		if s.refused > 0 && tokens > s.taken && tokens < s.refused {
			s.taken = tokens
		}
	})
}

func (c *contextMemory) update(key string, f func(*contextSeen)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil || len(c.seen) >= maxContextMemory {
		c.seen = map[string]contextSeen{}
	}
	s := c.seen[key]
	f(&s)
	c.seen[key] = s
}
