package taskdef

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/agenttask/agenttask/contract"
)

// The decoders walk the JSON themselves rather than rely on
// DisallowUnknownFields: encoding/json matches names case-insensitively and
// its unknown-field error does not name the path, while the API must refuse
// "Name" and say "history.foo". Members are visited in document order, so
// the first fault reported is the first in the body. A null member counts as
// absent; a member of the wrong type is refused naming it.

// Decode strictly decodes a task definition (create or change). It checks
// the shape only; Validate checks the rules.
func Decode(body []byte) (Definition, *FieldError) {
	var d Definition
	raw, fe := topObject(body)
	if fe != nil {
		return d, fe
	}
	fe = object("", raw, fields{
		"name":            str(&d.Name),
		"description":     str(&d.Description),
		"prompt":          obj(fields{"name": str(&d.Prompt.Name), "version": integer(&d.Prompt.Version)}),
		"model":           str(&d.Model),
		"maxTokens":       integer(&d.MaxTokens),
		"temperature":     number(&d.Temperature),
		"topP":            number(&d.TopP),
		"reasoningEffort": str(&d.ReasoningEffort),
		"json":            boolean(&d.JSON),
		"schema": func(field string, v json.RawMessage) *FieldError {
			switch kind(v) {
			case 'n':
				return nil
			case '{':
				d.Schema = v
				return nil
			}
			return refuse(field, "must be a JSON object, or null for none")
		},
		"input": obj(fields{"maxBytes": intPtr(&d.Input.MaxBytes)}),
		"variables": func(field string, v json.RawMessage) *FieldError {
			if kind(v) == 'n' {
				return nil
			}
			d.Variables = map[string]Variable{}
			return members(field, v, func(name string, item json.RawMessage) *FieldError {
				var vr Variable
				fe := object(field+"."+name, item, fields{"value": strPtr(&vr.Value), "maxBytes": intPtr(&vr.MaxBytes)})
				d.Variables[name] = vr
				return fe
			})
		},
		"history": func(field string, v json.RawMessage) *FieldError {
			if kind(v) == 'n' {
				return nil
			}
			d.History = &HistoryLimits{}
			return object(field, v, fields{"messages": integer(&d.History.Messages), "maxBytes": integer(&d.History.MaxBytes)})
		},
		"enabled": func(field string, v json.RawMessage) *FieldError {
			if kind(v) == 'n' {
				return nil
			}
			var b bool
			if err := json.Unmarshal(v, &b); err != nil {
				return refuse(field, "must be a boolean")
			}
			d.Enabled = &b
			return nil
		},
		"budget": budget(&d.Budget),
		"capabilities": func(field string, v json.RawMessage) *FieldError {
			if kind(v) == 'n' {
				return nil
			}
			d.Capabilities = []contract.Capability{}
			return array(field, v, func(item string, v json.RawMessage) *FieldError {
				c, fe := capability(item, v)
				d.Capabilities = append(d.Capabilities, c)
				return fe
			})
		},
	})
	return d, fe
}

// budget decodes a budget object (contract.Budget); null is none.
func budget(dst **contract.Budget) member {
	return func(field string, v json.RawMessage) *FieldError {
		if kind(v) == 'n' {
			return nil
		}
		b := &contract.Budget{}
		fe := object(field, v, fields{"units": int64Ptr(&b.Units), "inputTokens": int64Ptr(&b.InputTokens),
			"outputTokens": int64Ptr(&b.OutputTokens), "onExhausted": str(&b.OnExhausted)})
		*dst = b
		return fe
	}
}

// topObject checks the body is one JSON object and nothing after it.
func topObject(body []byte) (json.RawMessage, *FieldError) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, refuse("", "the body is empty: send a JSON object")
		}
		return nil, refuse("", "the body is not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, refuse("", "trailing data after the JSON object")
	}
	if kind(raw) != '{' {
		return nil, refuse("", "the body must be a JSON object")
	}
	return raw, nil
}

// member decodes one member's value; field is its dotted name.
type member func(field string, v json.RawMessage) *FieldError

// fields are the members an object may have.
type fields map[string]member

// object decodes a JSON object whose members are all in fs.
func object(path string, raw json.RawMessage, fs fields) *FieldError {
	return members(path, raw, func(name string, v json.RawMessage) *FieldError {
		f, ok := fs[name]
		if !ok {
			return refuse(join(path, name), "unknown field")
		}
		return f(join(path, name), v)
	})
}

// members visits each member of a JSON object in document order.
func members(path string, raw json.RawMessage, visit func(name string, v json.RawMessage) *FieldError) *FieldError {
	if kind(raw) != '{' {
		if path == "" {
			return refuse("", "the body must be a JSON object")
		}
		return refuse(path, "must be an object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // the '{'
		return refuse(path, "not valid JSON: %v", err)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return refuse(path, "not valid JSON: %v", err)
		}
		name, _ := t.(string) // object keys are always strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return refuse(join(path, name), "not valid JSON: %v", err)
		}
		if fe := visit(name, v); fe != nil {
			return fe
		}
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// kind is the first byte of a JSON value: '{', '[', '"', 'n', 't', 'f' or a
// number's first character.
func kind(v json.RawMessage) byte {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return 0
	}
	return v[0]
}

func typed(want string, dst any) member {
	return func(field string, v json.RawMessage) *FieldError {
		if err := json.Unmarshal(v, dst); err != nil {
			return refuse(field, "must be %s", want)
		}
		return nil
	}
}

func str(dst *string) member      { return typed("a string", dst) }
func strPtr(dst **string) member  { return typed("a string", dst) }
func integer(dst *int) member     { return typed("an integer", dst) }
func intPtr(dst **int) member     { return typed("an integer", dst) }
func int64Ptr(dst **int64) member { return typed("an integer", dst) }
func boolean(dst *bool) member    { return typed("a boolean", dst) }
func number(dst **float64) member { return typed("a number or null", dst) }
func obj(fs fields) member {
	return func(field string, v json.RawMessage) *FieldError {
		if kind(v) == 'n' {
			return nil
		}
		return object(field, v, fs)
	}
}

// array decodes a JSON array, visiting each element as path[i].
func array(path string, raw json.RawMessage, visit func(field string, v json.RawMessage) *FieldError) *FieldError {
	var items []json.RawMessage
	if kind(raw) != '[' || json.Unmarshal(raw, &items) != nil {
		return refuse(path, "must be an array")
	}
	for i, item := range items {
		if fe := visit(fmt.Sprintf("%s[%d]", path, i), item); fe != nil {
			return fe
		}
	}
	return nil
}

// capability decodes one capability strictly: an object whose keys are a
// capability's, exactly as docs/contract.md spells them.
func capability(field string, v json.RawMessage) (contract.Capability, *FieldError) {
	var c contract.Capability
	var members map[string]json.RawMessage
	if kind(v) != '{' || json.Unmarshal(v, &members) != nil {
		return c, refuse(field, "must be an object: a capability as docs/contract.md describes (name, kind, ...)")
	}
	known := capabilityKeys()
	for _, k := range sortedKeys(members) {
		if !known[k] {
			return c, refuse(field+"."+k, "a capability has no field %q (its fields: %s)", k, strings.Join(sortedKeys(known), ", "))
		}
	}
	if err := json.Unmarshal(v, &c); err != nil {
		return c, refuse(field, "%v", err)
	}
	return c, nil
}

// capabilityKeys are the JSON names of contract.Capability's fields.
func capabilityKeys() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeOf(contract.Capability{})
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}
