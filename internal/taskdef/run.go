package taskdef

import (
	"encoding/json"
	"fmt"

	"github.com/agenttask/agenttask/contract"
)

// MaxRunBodyBytes bounds a run request's body (256 KB, 1 KB = 1,000 bytes).
const MaxRunBodyBytes = 256_000

// Roles of a history message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// RunRequest is the body of "Run a task".
type RunRequest struct {
	Input     *string           `json:"input"`
	Variables map[string]string `json:"variables"`
	History   []Message         `json:"history"`
	Stream    bool              `json:"stream"`
	// Events "all" asks a streamed run for every event
	// (docs/streaming.md#every-event), not the seed's three; "" or
	// "seed": the seed's.
	Events string `json:"events,omitempty"`
	// Budget (docs/budgets.md#the-tasks-api) is the run's budget, in place of
	// the task's.
	Budget *contract.Budget `json:"budget,omitempty"`
}

// Message is an earlier message of a conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// DecodeRun strictly decodes a run request; CheckRun checks it against the
// task.
func DecodeRun(body []byte) (RunRequest, *FieldError) {
	var r RunRequest
	if len(body) > MaxRunBodyBytes {
		return r, refuse("", "the body is %d bytes: at most %d", len(body), MaxRunBodyBytes)
	}
	raw, fe := topObject(body)
	if fe != nil {
		return r, fe
	}
	fe = object("", raw, fields{
		"input": strPtr(&r.Input),
		"variables": func(field string, v json.RawMessage) *FieldError {
			if kind(v) == 'n' {
				return nil
			}
			r.Variables = map[string]string{}
			return members(field, v, func(name string, item json.RawMessage) *FieldError {
				var s string
				if kind(item) != '"' || json.Unmarshal(item, &s) != nil {
					return refuse(field+"."+name, "must be a string")
				}
				r.Variables[name] = s
				return nil
			})
		},
		"history": func(field string, v json.RawMessage) *FieldError {
			if kind(v) == 'n' {
				return nil
			}
			r.History = []Message{}
			return array(field, v, func(item string, v json.RawMessage) *FieldError {
				var m Message
				if fe := object(item, v, fields{"role": str(&m.Role), "content": str(&m.Content)}); fe != nil {
					return fe
				}
				r.History = append(r.History, m)
				return nil
			})
		},
		"stream": boolean(&r.Stream),
		"events": str(&r.Events),
		"budget": budget(&r.Budget),
	})
	return r, fe
}

// CheckRun checks a run request against a validated task definition, in the
// seed's order: input, variables, history, stream; then the budget.
func CheckRun(d Definition, r RunRequest) *FieldError {
	inputMax := 0
	if d.Input.MaxBytes != nil {
		inputMax = *d.Input.MaxBytes
	}
	switch {
	case inputMax == 0 && r.Input != nil:
		return refuse("input", "the task takes no input")
	case inputMax > 0 && (r.Input == nil || *r.Input == ""):
		return refuse("input", "required: the task takes up to %d bytes of input", inputMax)
	case inputMax > 0 && len(*r.Input) > inputMax:
		return refuse("input", "at most %d bytes, got %d", inputMax, len(*r.Input))
	}

	for _, name := range sortedKeys(r.Variables) {
		field := "variables." + name
		v, ok := d.Variables[name]
		switch {
		case !ok:
			return refuse(field, "the task has no variable %q", name)
		case v.Value != nil:
			return refuse(field, "the task fixes this variable: it cannot be sent")
		case len(r.Variables[name]) > openMax(v):
			return refuse(field, "at most %d bytes, got %d", openMax(v), len(r.Variables[name]))
		}
	}
	for _, name := range sortedKeys(d.Variables) {
		if _, sent := r.Variables[name]; !sent && d.Variables[name].Value == nil {
			return refuse("variables."+name, "required: the task leaves this variable open")
		}
	}

	var limits HistoryLimits
	if d.History != nil {
		limits = *d.History
	}
	switch {
	case len(r.History) > 0 && limits.Messages == 0:
		return refuse("history", "the task takes no history")
	case len(r.History) > limits.Messages:
		return refuse("history", "at most %d messages, got %d", limits.Messages, len(r.History))
	}
	total := 0
	for i, m := range r.History {
		if m.Role != RoleUser && m.Role != RoleAssistant {
			return refuse(itemField(i, "role"), "must be user or assistant")
		}
		if m.Content == "" {
			return refuse(itemField(i, "content"), "required")
		}
		total += len(m.Content)
	}
	if total > limits.MaxBytes {
		return refuse("history", "at most %d bytes in all, got %d", limits.MaxBytes, total)
	}

	switch {
	case r.Events != "" && r.Events != EventsAll && r.Events != EventsSeed:
		return refuse("events", "must be %q (every event) or %q (text, done and error), got %q", EventsAll, EventsSeed, r.Events)
	case r.Events == EventsAll && !r.Stream:
		return refuse("events", "asks a stream for every event: set \"stream\": true too")
	}
	return CheckBudget(r.Budget)
}

// A streamed run's events (RunRequest.Events).
const (
	EventsAll  = "all"
	EventsSeed = "seed"
)

func itemField(i int, name string) string {
	return fmt.Sprintf("history[%d].%s", i, name)
}

// openMax is an open variable's limit; 0 when the definition gives none.
func openMax(v Variable) int {
	if v.MaxBytes == nil {
		return 0
	}
	return *v.MaxBytes
}

// Prompt is the run's instructions: the prompt with the task's fixed values
// and the run's values for its open variables in place. Only open variables
// take a sent value (CheckRun refuses the others anyway), so a run can never
// replace a fixed value.
func Prompt(d Definition, promptText string, r RunRequest) string {
	values := fixedValues(d)
	for name, v := range r.Variables {
		if dv, ok := d.Variables[name]; ok && dv.Value == nil {
			values[name] = v
		}
	}
	return FillPrompt(promptText, values)
}
