package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/agenttask/agenttask/contract"
)

// Event is one message of a run's stream, as stored (JSON; with a codec,
// its text, json and message sealed: seal.go).
type Event struct {
	// ID is the message's JetStream stream sequence, set when it is read or
	// published, never stored: it grows for the run's whole life, also
	// after all its earlier events expired (a per-run count restarted at 1
	// then). Messages stored before carried a per-run count here; readers
	// ignore it.
	ID      int64 `json:"id,omitempty"`
	Turn    int   `json:"turn"`              // the run's turn (1-based); 0 when not known (the API's own events)
	Attempt int   `json:"attempt,omitempty"` // the model activity's Temporal attempt (1-based): a later one makes an earlier one stale
	// Answer counts the answers begun in the turn (1-based; 0, as in
	// messages stored before it, reads as 1): each model call cut short
	// (a retried attempt, a JSON answer asked again) ends its answer with
	// an interruption, and the next begins the answer again under the next
	// number. Readers tell by it that text restarts the answer.
	Answer int `json:"answer,omitempty"`
	// Step is the turn's model call (1-based; 0 in events of runs whose
	// turns stream one call only): a turn that calls tools makes one call
	// per round, each a new step, and a later step makes an earlier one's
	// attempts stale.
	Step int `json:"step,omitempty"`
	// Fact numbers the step's facts (1-based; 0: not a fact): events a
	// step publishes from what its input says happened (a tool call's
	// result), the same on every attempt. A later attempt publishes only
	// those after the last one stored (Writer.Facts).
	Fact int `json:"fact,omitempty"`
	// Wrapped marks text that is the model's, not the reply: an agent
	// whose reply is a JSON object (exposes, mount, output) wraps it.
	Wrapped bool `json:"wrapped,omitempty"`
	// CutStep and CutAttempt name, in an interruption, the attempt whose
	// answer (Answer) it ends when that is not the event's own (a later
	// attempt ended it): a reader drops that answer's provisional events.
	CutStep    int       `json:"cutStep,omitempty"`
	CutAttempt int       `json:"cutAttempt,omitempty"`
	Type       string    `json:"type"`           // one of the Type constants
	Tool       *ToolCall `json:"tool,omitempty"` // tool_call.*: the call (sealed with a codec)
	// Data is the body of the other kinds of event (turn.started,
	// approval.requested, ...: events.go), as JSON; sealed with a codec.
	Data json.RawMessage `json:"data,omitempty"`
	// Path is the sub-task an event belongs to, "" for the task itself:
	// its task ID after the run's (a sub-task of a sub-task has a longer
	// one). It is not stored: a reader takes it from the subject.
	Path       string          `json:"-"`
	Text       string          `json:"text,omitempty"`
	StopReason string          `json:"stopReason,omitempty"`
	Usage      *contract.Usage `json:"usage,omitempty"` // done: the turn's token count
	JSON       json.RawMessage `json:"json,omitempty"`
	Code       string          `json:"code,omitempty"`    // error: CodeStreamInterrupted, or the run's error type (e.g. MODEL_ERROR, TURN_CANCELED)
	Message    string          `json:"message,omitempty"` // error detail
}

// ToolCall is a tool call's event: started (the model asked for it:
// provisional, like text) or finished (its result: a fact).
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"` // started: as the model wrote them
	// Result is the start of the result the model reads (finished), at
	// most MaxToolSummary bytes; Truncated says it was cut.
	Result    string                 `json:"result,omitempty"`
	Truncated bool                   `json:"truncated,omitempty"`
	Error     bool                   `json:"error,omitempty"` // finished: the model read an error
	Files     []contract.ContentPart `json:"files,omitempty"` // finished: files the call brought
}

// MaxToolSummary bounds a finished tool call's result summary.
const MaxToolSummary = 1024

const (
	TypeText  = "text"
	TypeDone  = "done"
	TypeError = "error"
	// TypeToolCallStarted: the model asked for a tool call (provisional:
	// an interruption of its answer withdraws it).
	TypeToolCallStarted = "tool_call.started"
	// TypeToolCallFinished: a tool call's result (a fact).
	TypeToolCallFinished = "tool_call.finished"

	// CodeStreamInterrupted marks the end of an answer that will never be
	// finished (an interruption): the run goes on, the turn's next answer
	// follows under the next Answer number. It is stored as an error event
	// with this code (as before, so readers of either version agree where
	// an answer ends), but it is not the turn's error: the Tasks API never
	// relays it as one (it ends a stream that carried the answer's text,
	// which the seed calls cut off).
	CodeStreamInterrupted = "stream_interrupted"
)

// runIDRule keeps a run ID one NATS subject token: no '.', no wildcards,
// no spaces, and short enough for a subject.
var runIDRule = regexp.MustCompile(`^[A-Za-z0-9_-]{1,200}$`)

// CheckRunID refuses run IDs that cannot be a subject token.
func CheckRunID(runID string) error {
	if !runIDRule.MatchString(runID) {
		return fmt.Errorf("broker: run ID %q must be 1 to 200 characters from A-Z, a-z, 0-9, '_' and '-'", runID)
	}
	return nil
}

// Subject is the run's subject in the stream.
func Subject(runID string) (string, error) {
	if err := CheckRunID(runID); err != nil {
		return "", err
	}
	return subjectPrefix + runID, nil
}

// maxSubjectBytes bounds a task's subject: a deep sub-task's ID grows by
// a segment per level.
const maxSubjectBytes = 1024

// CheckTaskID refuses a task ID whose events have no subject: a run ID
// (CheckRunID), or a sub-task's ID, its run's ID and further tokens of
// the same characters joined by '.' (run.capability.t3.c1).
func CheckTaskID(taskID string) error {
	if len(taskID) > maxSubjectBytes-len(subjectPrefix) {
		return fmt.Errorf("broker: task ID of %d bytes: at most %d", len(taskID), maxSubjectBytes-len(subjectPrefix))
	}
	for _, token := range strings.Split(taskID, ".") {
		if !runIDRule.MatchString(token) {
			return fmt.Errorf("broker: task ID %q must be tokens of 1 to 200 characters from A-Z, a-z, 0-9, '_' and '-', joined by '.'", taskID)
		}
	}
	return nil
}

// TaskSubject is a task's subject: a sub-task's is under its run's
// (runs.<run>.<capability>.t3.c1), so a follower of the run reads both.
func TaskSubject(taskID string) (string, error) {
	if err := CheckTaskID(taskID); err != nil {
		return "", err
	}
	return subjectPrefix + taskID, nil
}

// pathOf is the path of subject under the run's subject runSubj.
func pathOf(subject, runSubj string) string {
	return strings.TrimPrefix(strings.TrimPrefix(subject, runSubj), ".")
}

const subjectPrefix = "runs."

// Interrupted reports whether e ends an answer that will never be finished.
func (e Event) Interrupted() bool { return e.Type == TypeError && e.Code == CodeStreamInterrupted }

// Provisional reports whether e is an attempt's output that a later
// attempt may withdraw: its text and the tool calls it asked for. Facts,
// ends and interruptions are final.
func (e Event) Provisional() bool {
	return e.Type == TypeText || e.Type == TypeToolCallStarted
}

// Cut is the step and attempt whose answer an interruption ends.
func (e Event) Cut() (step, attempt int) {
	if e.CutAttempt > 0 {
		return e.CutStep, e.CutAttempt
	}
	return e.Step, e.Attempt
}

// AnswerNumber is e's Answer, 1 when it has none (messages stored before
// answers were counted, the API's events of a turn's first answer).
func (e Event) AnswerNumber() int { return max(e.Answer, 1) }

// marshal writes JSON without HTML escaping: model text is full of '<' and
// '&', and escaping them would grow each message up to six times.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
