package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
)

// Usage is a model call's token count, as the done event carries it.
type Usage struct {
	InputTokens      int `json:"inputTokens"`
	OutputTokens     int `json:"outputTokens"`
	CacheReadTokens  int `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int `json:"cacheWriteTokens,omitempty"`
}

// Event is one message of a run's stream, as stored (JSON).
type Event struct {
	ID         int64           `json:"id"`
	Turn       int             `json:"turn"`              // the run's turn (1-based); 0 when not known (the API's own events)
	Attempt    int             `json:"attempt,omitempty"` // the model activity's attempt (1-based)
	Type       string          `json:"type"`              // TypeText, TypeDone or TypeError
	Text       string          `json:"text,omitempty"`
	StopReason string          `json:"stopReason,omitempty"`
	Usage      *Usage          `json:"usage,omitempty"`
	JSON       json.RawMessage `json:"json,omitempty"`
	Code       string          `json:"code,omitempty"`    // error: CodeStreamInterrupted, or the run's error type (e.g. MODEL_ERROR, TURN_CANCELED)
	Message    string          `json:"message,omitempty"` // error detail
}

const (
	TypeText  = "text"
	TypeDone  = "done"
	TypeError = "error"

	// CodeStreamInterrupted marks the end of an attempt's text that will
	// never be finished: readers drop what they showed of it.
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

// encode marshals without HTML escaping: model text is full of '<' and
// '&', and escaping them would grow each message up to six times.
func encode(e Event) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func decode(data []byte) (Event, error) {
	var e Event
	err := json.Unmarshal(data, &e)
	return e, err
}
