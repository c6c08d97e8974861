package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/agenttask/agenttask/contract"
)

const (
	// DemoProvider serves the offline demo model when RouterOptions.EnableDemo is set.
	DemoProvider = "demo"
	// DemoModel is the canonical demo model name; any name under "demo/" works.
	DemoModel = DemoProvider + "/offline"
)

// demoEcho bounds how much of the user's message the demo repeats.
const demoEcho = 200

// demoComplete answers without any network so the runtime can be tried with no
// credentials. Answers are deterministic and say plainly that they are canned.
func demoComplete(ctx context.Context, name string, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, demoAbandoned(name, err)
	}
	text := fmt.Sprintf("[offline demo model] You said: %s. Set %s to talk to a real model.",
		demoSaid(req.Messages), EnvOpenAIAPIKey)

	out := text
	if req.JSONSchema != nil {
		// Round-trip through JSON so Go-built schemas ([]string enums, nested
		// typed maps) look exactly like decoded ones.
		var schema map[string]any
		b, err := json.Marshal(req.JSONSchema)
		if err == nil {
			err = json.Unmarshal(b, &schema)
		}
		if err != nil {
			return Response{}, &Error{Message: fmt.Sprintf("llm: %s (model %q): cannot encode JSON schema: %v", DemoProvider, name, err)}
		}
		f := schemaFiller{root: schema, text: text}
		b, err = json.Marshal(f.value(schema, "", 0))
		if err != nil {
			return Response{}, &Error{Message: fmt.Sprintf("llm: %s (model %q): cannot build demo answer: %v", DemoProvider, name, err)}
		}
		out = string(b)
	}

	in := 0
	for _, m := range req.Messages {
		in += len(m.Content)
	}
	resp := Response{
		Text:       out,
		StopReason: StopEnd,
		Usage:      contract.Usage{InputTokens: approxTokens(in), OutputTokens: approxTokens(len(out))},
		Model:      name,
		Provider:   DemoProvider,
	}
	if req.OnText != nil {
		// Stream like a real model, a word at a time, so callers exercise
		// their streaming path offline too.
		for _, d := range SplitWords(out) {
			if err := ctx.Err(); err != nil {
				return Response{}, demoAbandoned(name, err)
			}
			req.OnText(d)
		}
	}
	return resp, nil
}

// SplitWords splits s after each run of spaces, so the pieces join back
// to s: how the demo model (and the test model) stream an answer.
func SplitWords(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			return append(out, s)
		}
		for i < len(s) && s[i] == ' ' {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// demoAbandoned is the error for a caller that gave up, as endpoints give it.
func demoAbandoned(name string, err error) *Error {
	return &Error{Retryable: true, Message: fmt.Sprintf("llm: %s (model %q): request abandoned: %v", DemoProvider, name, err), cause: err}
}

// demoSaid is the last user message on one line, truncated.
func demoSaid(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleUser {
			return truncate(strings.Join(strings.Fields(msgs[i].Content), " "), demoEcho)
		}
	}
	return "(nothing)"
}

// approxTokens uses the common ~4 bytes per token rule of thumb.
func approxTokens(n int) int {
	return max(1, n/4)
}

// schemaFiller builds a value that fits a JSON schema, with placeholders.
type schemaFiller struct {
	root map[string]any
	text string // goes into a top-level "message" property
}

// maxDepth stops recursive schemas ($ref cycles) from looping.
const maxDepth = 16

func (f *schemaFiller) value(s map[string]any, name string, depth int) any {
	if depth > maxDepth || s == nil {
		return nil
	}
	if ref, ok := s["$ref"].(string); ok {
		return f.value(f.resolve(ref), name, depth+1)
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			alt, _ := alts[0].(map[string]any)
			return f.value(alt, name, depth+1)
		}
	}

	isMessage := name == "message" && depth == 1
	switch schemaType(s) {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		for k, p := range props {
			ps, _ := p.(map[string]any)
			out[k] = f.value(ps, k, depth+1)
		}
		return out
	case "array":
		items, ok := s["items"].(map[string]any)
		if !ok || num(s, "maxItems", 1) < 1 {
			return []any{}
		}
		return []any{f.value(items, singular(name), depth+1)}
	case "string":
		if isMessage || depth == 0 {
			return f.text
		}
		return placeholderString(s, name)
	case "integer":
		lo, hi := num(s, "minimum", math.Inf(-1)), num(s, "maximum", math.Inf(1))
		return int64(math.Min(math.Max(1, math.Ceil(lo)), math.Floor(hi)))
	case "number":
		return math.Min(math.Max(1, num(s, "minimum", math.Inf(-1))), num(s, "maximum", math.Inf(1)))
	case "boolean":
		return false
	case "null":
		return nil
	}
	if isMessage || depth == 0 {
		return f.text // untyped: text is as plausible as anything
	}
	return nil
}

// resolve follows local references ("#", "#/$defs/x", "#/definitions/x").
func (f *schemaFiller) resolve(ref string) map[string]any {
	if !strings.HasPrefix(ref, "#") {
		return nil
	}
	cur := any(f.root)
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#"), "/") {
		if part == "" {
			continue
		}
		part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	m, _ := cur.(map[string]any)
	return m
}

// schemaType reads "type", taking the first non-null entry of a type list and
// inferring object/array from the keywords when "type" is absent.
func schemaType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, e := range t {
			if str, ok := e.(string); ok && str != "null" {
				return str
			}
		}
		return "null"
	}
	if _, ok := s["properties"]; ok {
		return "object"
	}
	if _, ok := s["items"]; ok {
		return "array"
	}
	return ""
}

func placeholderString(s map[string]any, name string) string {
	var v string
	switch format, _ := s["format"].(string); format {
	case "date-time":
		v = "2024-01-01T00:00:00Z"
	case "date":
		v = "2024-01-01"
	case "time":
		v = "00:00:00Z"
	case "email":
		v = "demo@example.com"
	case "uri", "url", "iri":
		v = "https://example.com/"
	case "uuid":
		v = "00000000-0000-4000-8000-000000000000"
	default:
		v = strings.TrimSpace("demo " + name)
	}
	if n := int(num(s, "minLength", 0)); len(v) < n {
		v += strings.Repeat("x", n-len(v))
	}
	if n := num(s, "maxLength", math.Inf(1)); float64(len(v)) > n {
		v = v[:int(n)]
	}
	return v
}

func num(s map[string]any, key string, def float64) float64 {
	if f, ok := s[key].(float64); ok {
		return f
	}
	return def
}

// singular names array items after their property ("tags" -> "tag").
func singular(name string) string {
	if len(name) > 1 && strings.HasSuffix(name, "s") {
		return name[:len(name)-1]
	}
	return name
}
