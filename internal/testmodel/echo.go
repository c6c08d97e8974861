package testmodel

import (
	"encoding/json"
	"strings"
)

// Echo answers "echo: " plus the user messages since the last assistant
// message, so a test can see exactly what a turn sent. With a JSON schema it
// answers {"message": <that text>} plus a zero value for every other property.
func Echo(c Call) Reply {
	var said []string
	for _, m := range c.Messages {
		switch m.Role {
		case "assistant":
			said = said[:0]
		case "user":
			said = append(said, m.Content)
		}
	}
	text := "echo: " + strings.Join(said, "\n")
	if c.JSONSchema == nil {
		return Reply{Text: text}
	}
	obj := map[string]any{}
	if props, ok := c.JSONSchema["properties"].(map[string]any); ok {
		for name, p := range props {
			ps, _ := p.(map[string]any)
			obj[name] = zeroValue(ps)
		}
	}
	obj["message"] = text
	b, err := json.Marshal(obj)
	if err != nil { // cannot happen: values come from decoded JSON
		return Reply{Status: 500, ErrorMessage: "testmodel: " + err.Error()}
	}
	return Reply{Text: string(b)}
}

// zeroValue is the zero of a property's type; an enum's first value wins.
func zeroValue(s map[string]any) any {
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	t, _ := s["type"].(string)
	if list, ok := s["type"].([]any); ok {
		for _, e := range list {
			if str, _ := e.(string); str != "null" {
				t = str
				break
			}
		}
	}
	switch t {
	case "string":
		return ""
	case "number", "integer":
		return 0
	case "boolean":
		return false
	case "array":
		return []any{}
	case "object":
		return map[string]any{}
	}
	return nil
}
