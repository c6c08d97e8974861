package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

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
	Answer     int             `json:"answer,omitempty"`
	Type       string          `json:"type"` // TypeText, TypeDone or TypeError
	Text       string          `json:"text,omitempty"`
	StopReason string          `json:"stopReason,omitempty"`
	Usage      *contract.Usage `json:"usage,omitempty"` // done: the turn's token count
	JSON       json.RawMessage `json:"json,omitempty"`
	Code       string          `json:"code,omitempty"`    // error: CodeStreamInterrupted, or the run's error type (e.g. MODEL_ERROR, TURN_CANCELED)
	Message    string          `json:"message,omitempty"` // error detail
}

const (
	TypeText  = "text"
	TypeDone  = "done"
	TypeError = "error"

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

const subjectPrefix = "runs."

// Interrupted reports whether e ends an answer that will never be finished.
func (e Event) Interrupted() bool { return e.Type == TypeError && e.Code == CodeStreamInterrupted }

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
