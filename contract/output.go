package contract

import (
	"encoding/json"
	"errors"
)

// OutputSpec asks for the caller's JSON when the task is done: one pass of
// the output model over what the task collected, checked against Schema.
type OutputSpec struct {
	Instructions string          `json:"instructions"`
	Schema       json.RawMessage `json:"schema,omitempty"`
	Model        string          `json:"model,omitempty"` // "provider/model"; default: the worker's
}

// CheckOutputSpec checks an output request; a schema outside the subset is
// INVALID_OUTPUT naming the offending path.
func CheckOutputSpec(path string, o OutputSpec) (*Compiled, error) {
	if o.Instructions == "" {
		return nil, &Error{Type: ErrInvalidOutput, Message: path + ".instructions: say what the result should hold"}
	}
	if o.Model != "" {
		if _, err := CheckAgent(path, AgentSpec{Name: "output", Model: o.Model}); err != nil { // names path.model
			return nil, &Error{Type: ErrInvalidOutput, Message: MessageOf(err)}
		}
	}
	if len(o.Schema) == 0 || string(o.Schema) == "null" {
		return nil, nil
	}
	c, err := Compile(path+".schema", o.Schema)
	if err != nil {
		var se *Error
		if errors.As(err, &se) {
			return nil, &Error{Type: ErrInvalidOutput, Message: se.Message}
		}
		return nil, &Error{Type: ErrInvalidOutput, Message: err.Error()}
	}
	return c, nil
}

// ValidateObject validates a whole JSON object against a compiled schema.
func (c *Compiled) ValidateObject(raw json.RawMessage) []Violation {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return []Violation{{Path: "/", Message: "not one JSON object"}}
	}
	return c.Validate(obj)
}
