package activities

import (
	"encoding/json"
	"strings"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/llm"
)

// parseOutput reads the model's answer into an output TaskIO and lists what
// keeps it from being one.
func parseOutput(a *contract.Agent, resp llm.Response) (contract.TaskIO, []contract.Violation) {
	if a.Spec.JSON {
		return parseJSONAnswer(a, resp.Text)
	}
	if !structured(a) {
		return contract.TaskIO{Message: textMessage(resp.Text)}, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(strings.TrimSpace(resp.Text)), &obj); err != nil || obj == nil {
		return contract.TaskIO{}, []contract.Violation{{Path: "/", Message: "the answer is not one JSON object"}}
	}
	var text string
	if raw, ok := obj[contract.KeyMessage]; !ok {
		return contract.TaskIO{}, []contract.Violation{{Path: "/message", Message: "missing: the reply text goes under \"message\""}}
	} else if err := json.Unmarshal(raw, &text); err != nil {
		return contract.TaskIO{}, []contract.Violation{{Path: "/message", Message: "must be a string"}}
	}
	delete(obj, contract.KeyMessage)
	parts := textMessage(text)
	if a.Spec.Mount != nil {
		if raw, ok := obj[keyAttachments]; ok {
			var refs []string
			if err := json.Unmarshal(raw, &refs); err != nil {
				return contract.TaskIO{}, []contract.Violation{{Path: "/" + keyAttachments, Message: "must be a list of file references"}}
			}
			for _, r := range refs {
				ref := r
				parts = append(parts, contract.ContentPart{MimeType: mimeOf(ref), File: &ref})
			}
			delete(obj, keyAttachments)
		}
	}
	if vs := contract.CheckOutput(a, obj); len(vs) > 0 {
		return contract.TaskIO{}, vs
	}
	if len(obj) == 0 {
		obj = nil
	}
	return contract.TaskIO{Message: parts, Values: obj}, nil
}

// parseJSONAnswer checks a JSON agent's answer: one JSON object, fitting
// the agent's schema when it has one. The object stays the output's text.
func parseJSONAnswer(a *contract.Agent, text string) (contract.TaskIO, []contract.Violation) {
	text = strings.TrimSpace(text)
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &obj); err != nil || obj == nil {
		return contract.TaskIO{}, []contract.Violation{{Path: "/", Message: "the answer is not one JSON object"}}
	}
	if a.Answer != nil {
		if vs := a.Answer.Validate(obj); len(vs) > 0 {
			return contract.TaskIO{}, vs
		}
	}
	return contract.TaskIO{Message: textMessage(text)}, nil
}
