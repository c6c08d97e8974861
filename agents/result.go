package agents

import (
	"encoding/json"
	"fmt"

	"github.com/agenttask/agenttask/contract"
)

// Result is what an agent task ended with.
type Result struct {
	TaskID string
	// Output is the shaped JSON when the task asked for output (Shaped),
	// otherwise the text of its last answer ("" when it gave none).
	Output string
	Shaped bool
	// Last is the last answer whole (files, exposes keys); nil when none.
	Last    *contract.TaskIO
	Usage   contract.Usage
	Records []contract.Collected // the values the output was shaped from
	Turns   int
	EndedBy string // close | single | idle | finish
}

func resultOf(taskID string, r contract.Result) *Result {
	out := &Result{TaskID: taskID, Last: r.LastOutput, Usage: r.Usage, Records: r.Records, Turns: r.Turns, EndedBy: r.EndedBy}
	switch {
	case len(r.Result) > 0:
		out.Output, out.Shaped = string(r.Result), true
	case r.LastOutput != nil:
		out.Output = contract.TextOf(*r.LastOutput)
	}
	return out
}

// Decode unmarshals the output into v: the shaped JSON, or the answer's
// text when it is JSON (an agent with "json": true); v a *string takes the
// text as it is.
func (r *Result) Decode(v any) error { return decode(r.TaskID, r.Output, v) }

// Answer is Ask's reply: the output that answered the follow-up.
type Answer struct {
	TaskID     string
	Text       string
	Output     contract.TaskIO   // committed_at set; exposes keys in Values
	Turn       contract.TurnInfo // stop_reason, model, usage
	ReceivedAt string
}

// Decode unmarshals the answer's text, as Result.Decode does.
func (a *Answer) Decode(v any) error { return decode(a.TaskID, a.Text, v) }

func decode(taskID, text string, v any) error {
	if s, ok := v.(*string); ok {
		*s = text
		return nil
	}
	if text == "" {
		return fmt.Errorf("agent task %q gave no output to decode; ask for one with StartArgs.Output (a schema) or an agent with \"json\": true", taskID)
	}
	if err := json.Unmarshal([]byte(text), v); err != nil {
		return fmt.Errorf("agent task %q: its output does not decode into %T: %w; ask for a shaped output (StartArgs.Output) whose schema fits the type", taskID, v, err)
	}
	return nil
}
