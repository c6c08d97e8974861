package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/maypok86/otter/v2"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Compiled is a subset schema ready to validate values.
type Compiled struct {
	schema     *jsonschema.Schema
	properties []string
	required   []string
	open       bool // additionalProperties: true at the top
}

// Declares reports whether name is a top-level property.
func (c *Compiled) Declares(name string) bool {
	for _, p := range c.properties {
		if p == name {
			return true
		}
	}
	return false
}

// Open reports whether the top level admits undeclared keys. Dynamic TaskIO
// keys are the declared ones unless a schema says additionalProperties: true.
func (c *Compiled) Open() bool { return c.open }

// Violation is one schema rule an instance breaks, by JSON path.
type Violation struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (v Violation) String() string { return v.Path + ": " + v.Message }

// compiled caches schemas by their bytes, weighed by 16 times their size
// (a compiled schema's memory is of that order) up to compiledCacheWeight:
// a worker that sees many distinct schemas keeps the frequent ones. The
// cache is a pure memo (a miss compiles the same schema again), so using it
// from workflow code stays deterministic.
const compiledCacheWeight = 64 << 20

var compiled = otter.Must(&otter.Options[string, *Compiled]{
	MaximumWeight: compiledCacheWeight,
	Weigher:       func(raw string, _ *Compiled) uint32 { return uint32(16 * len(raw)) },
})

// Compile checks the subset and compiles raw; path names it in errors.
func Compile(path string, raw json.RawMessage) (*Compiled, error) {
	if c, ok := compiled.GetIfPresent(string(raw)); ok {
		return c, nil
	}
	if err := CheckSubset(path, raw); err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource("mem://schema.json", bytes.NewReader(raw)); err != nil {
		return nil, Invalid("%s: %v", path, err)
	}
	// The compiler ranges over maps while it builds; the schema it returns
	// validates alike whatever the order.
	//workflowcheck:ignore
	s, err := c.Compile("mem://schema.json")
	if err != nil {
		return nil, Invalid("%s: %v", path, err)
	}
	out := &Compiled{schema: s, properties: TopProperties(raw)}
	var top struct {
		Required             []string `json:"required"`
		AdditionalProperties *bool    `json:"additionalProperties"`
	}
	_ = json.Unmarshal(raw, &top)
	out.required = top.Required
	out.open = top.AdditionalProperties != nil && *top.AdditionalProperties
	compiled.Set(string(raw), out)
	return out, nil
}

// Properties lists the top-level property names, sorted.
func (c *Compiled) Properties() []string { return c.properties }

// Required lists the required top-level property names.
func (c *Compiled) Required() []string { return c.required }

// Validate checks a JSON object given as its top-level values; the
// violations come back sorted by path so messages are deterministic.
func (c *Compiled) Validate(values map[string]json.RawMessage) []Violation {
	obj := make(map[string]any, len(values))
	keys := make([]string, 0, len(values))
	//workflowcheck:ignore sorted below
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first value that is not JSON is the same on every replay
	for _, k := range keys {
		raw := values[k]
		v, err := decodeJSON(raw)
		if err != nil {
			return []Violation{{Path: "/" + k, Message: "not valid JSON: " + err.Error()}}
		}
		obj[k] = v
	}
	// jsonschema ranges over maps while it validates; the violations are
	// sorted below, so the result does not depend on its order.
	//workflowcheck:ignore
	err := c.schema.Validate(obj)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Path: "/", Message: err.Error()}}
	}
	var out []Violation
	seen := map[string]bool{}
	for _, e := range ve.BasicOutput().Errors {
		if e.Error == "" || strings.HasPrefix(e.Error, "doesn't validate with") {
			continue // an umbrella entry; its causes carry the detail
		}
		p := e.InstanceLocation
		if p == "" {
			p = "/"
		}
		key := p + "\x00" + e.Error
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, Violation{Path: p, Message: e.Error})
	}
	if len(out) == 0 {
		out = append(out, Violation{Path: "/", Message: ve.Error()})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Message < out[j].Message
	})
	return out
}

// JoinViolations renders violations as one message.
func JoinViolations(vs []Violation) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.String()
	}
	return strings.Join(parts, "; ")
}

// ObjectSchema returns the JSON Schema of an output object: the message text
// plus every exposes key, all required. It is what the model is asked for.
func OutputObjectSchema(exposes json.RawMessage) (map[string]any, error) {
	var top map[string]any
	if len(exposes) > 0 {
		if err := json.Unmarshal(exposes, &top); err != nil {
			return nil, fmt.Errorf("exposes: %w", err)
		}
	}
	props := map[string]any{}
	if p, ok := top["properties"].(map[string]any); ok {
		for k, v := range p {
			props[k] = v
		}
	}
	props[KeyMessage] = map[string]any{"type": "string", "description": "Your reply to the user, as plain text."}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             names,
		"additionalProperties": false,
	}, nil
}
