package broker

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agenttask/agenttask/internal/codec"
)

// Events at rest in the broker are encrypted with the runtime's codec
// (AGENT_CODEC_KEYS) when the process has one, as Temporal payloads and
// transcript objects are: what a reader of the stream sees of a run (its
// text, a JSON answer, an error's message) is sealed with the current key
// in codec.SealBlob's format, which names the key, so a rotated key stays
// readable while it is listed. What the writers need to number and order a
// run's events (turn, attempt, answer, type, code) and the token counts
// stay plain: they say nothing of the conversation.
//
// A message without "sealed" is read as it is: events published before
// the codec was set, or by a process without keys, stay readable.

// sealedPart is what the codec seals of an event.
type sealedPart struct {
	Text    string          `json:"text,omitempty"`
	JSON    json.RawMessage `json:"json,omitempty"`
	Message string          `json:"message,omitempty"`
	Tool    *ToolCall       `json:"tool,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// wireEvent is an event as stored: Sealed holds sealedPart, sealed.
type wireEvent struct {
	Event
	Sealed []byte `json:"sealed,omitempty"`
}

// errUnreadable marks a sealed event this process cannot decrypt (no
// keys, a key it lacks, damaged data): a reader stops at it rather than
// skip text of the answer.
var errUnreadable = errors.New("broker: an encrypted event cannot be read")

// SetCodec makes the broker encrypt the events it publishes with c and
// decrypt those it reads. Set it before the first writer or follower; nil
// (the default) publishes plain events and reads only plain ones.
func (b *Broker) SetCodec(c *codec.Codec) { b.codec.Store(c) }

// encode is the stored form of e: its ID is not stored (the stream
// sequence is the ID), its readable part is sealed when a codec is set.
func (b *Broker) encode(e Event) ([]byte, error) {
	e.ID = 0
	c := b.codec.Load()
	part := sealedPart{Text: e.Text, JSON: e.JSON, Message: e.Message, Tool: e.Tool, Data: e.Data}
	if c == nil || (part.Text == "" && part.JSON == nil && part.Message == "" && part.Tool == nil && part.Data == nil) {
		return marshal(e)
	}
	plain, err := marshal(part)
	if err != nil {
		return nil, err
	}
	w := wireEvent{Event: e}
	w.Text, w.JSON, w.Message, w.Tool, w.Data = "", nil, "", nil, nil
	if w.Sealed, err = c.SealBlob(plain); err != nil {
		return nil, fmt.Errorf("broker: encrypt event: %w", err)
	}
	return marshal(w)
}

// envelope reads what a writer needs of a stored event, without
// decrypting it.
func envelope(data []byte) (Event, error) {
	var w wireEvent
	err := json.Unmarshal(data, &w)
	return w.Event, err
}

// decode reads a stored event whole, decrypting its sealed part.
func (b *Broker) decode(data []byte) (Event, error) {
	var w wireEvent
	if err := json.Unmarshal(data, &w); err != nil {
		return Event{}, err
	}
	if w.Sealed == nil {
		return w.Event, nil
	}
	// Without keys (a nil codec) too, the error names the event's key and
	// AGENT_CODEC_KEYS (codec.MissingKeyError).
	plain, err := b.codec.Load().OpenBlob(w.Sealed)
	if err != nil {
		return Event{}, fmt.Errorf("%w: %w", errUnreadable, err)
	}
	var part sealedPart
	if err := json.Unmarshal(plain, &part); err != nil {
		return Event{}, fmt.Errorf("%w: %w", errUnreadable, err)
	}
	e := w.Event
	e.Text, e.JSON, e.Message, e.Tool, e.Data = part.Text, part.JSON, part.Message, part.Tool, part.Data
	return e, nil
}
