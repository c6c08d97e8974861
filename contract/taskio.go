package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Well-known TaskIO keys: no parameters or exposes schema may supply them.
const (
	KeyMessage     = "message"
	KeyReceivedAt  = "received_at"
	KeyCommittedAt = "committed_at"
	// KeyType is the one presentation field the messages projection adds.
	KeyType = "type"
	// KeyInputID is the caller's idempotency key on an input (at most
	// MaxInputIDBytes): a repeated ID creates no second input. The runtime
	// takes it off the input, so it never shows in messages.
	KeyInputID = "input_id"
)

// MaxInputIDBytes bounds an input ID.
const MaxInputIDBytes = 128

// IsWellKnownKey reports whether k is reserved by TaskIO or the messages projection.
func IsWellKnownKey(k string) bool {
	return k == KeyMessage || k == KeyReceivedAt || k == KeyCommittedAt || k == KeyType
}

// ContentPart is one piece of conversational content (docs/contract.md#contentpart).
type ContentPart struct {
	MimeType  string          `json:"mimeType"`
	Text      *string         `json:"text,omitempty"`
	File      *string         `json:"file,omitempty"`
	SizeBytes *int64          `json:"sizeBytes,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`

	// unknown lists the keys of the JSON the part was decoded from that
	// are none of the above, sorted. Decoding keeps them out of the part
	// (what the runtime wrote itself, a carry or a history, reads as it
	// always did) and notes them here, so CheckPartKeys can refuse them
	// in what a caller sends. They are never encoded.
	unknown []string
}

// contentPartJSON is ContentPart without its methods.
type contentPartJSON ContentPart

// UnmarshalJSON reads a part leniently: a key that is not one of the
// part's (such as "bytes") is left out, and noted for CheckPartKeys.
func (p *ContentPart) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var strict contentPartJSON
	if dec.Decode(&strict) == nil {
		*p = ContentPart(strict)
		return nil
	}
	// An unknown key, or an error the lenient decoder reports as well.
	var lenient contentPartJSON
	if err := json.Unmarshal(b, &lenient); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	for k := range keys {
		if !isPartKey(k) {
			lenient.unknown = append(lenient.unknown, k)
		}
	}
	sort.Strings(lenient.unknown)
	*p = ContentPart(lenient)
	return nil
}

// partKeys are a content part's keys.
var partKeys = []string{"mimeType", "text", "file", "sizeBytes", "metadata"}

// isPartKey reports whether k names a field of ContentPart, as
// encoding/json matches it (case-insensitively).
func isPartKey(k string) bool {
	for _, pk := range partKeys {
		if strings.EqualFold(k, pk) {
			return true
		}
	}
	return false
}

// UnknownKeys lists the keys of the JSON p was decoded from that are not a
// content part's (sorted); nil for a part built in code.
func (p ContentPart) UnknownKeys() []string { return slices.Clone(p.unknown) }

// CheckPartKeys refuses an input whose parts were decoded from JSON with
// keys a content part does not have (a part has mimeType, text, file,
// sizeBytes and metadata), naming the first such part and its keys. Decoding
// drops such keys silently, so this is what keeps a caller's "bytes": [...]
// from vanishing unseen: every path that takes an input from a caller runs
// it. State the runtime wrote itself is never checked with it.
func CheckPartKeys(in TaskIO) error {
	for i, p := range in.Message {
		if len(p.unknown) == 0 {
			continue
		}
		what := fmt.Sprintf("%q is not a content-part key", p.unknown[0])
		if len(p.unknown) > 1 {
			what = quoteList(p.unknown) + " are not content-part keys"
		}
		return Invalid("message[%d]: %s; a part has only %s (seed 001). Content is inline text or a file reference, never bytes in the message: upload the data to the agent's mount and send a file reference such as {\"mimeType\": \"image/png\", \"file\": \"task://photo.png\"}, and put small annotations in metadata", i, what, quoteList(partKeys))
	}
	return nil
}

// TextPart returns an inline text/plain part.
func TextPart(s string) ContentPart {
	n := int64(len(s))
	return ContentPart{MimeType: "text/plain", Text: &s, SizeBytes: &n}
}

// TextParts splits text into inline parts within the budget
// (MaxInlineTextBytes), at rune boundaries; nothing is dropped.
//
// Text over the budget is refused, never transformed: the runtime does
// not split what it is sent or what a model answers. A caller's text is
// one part (TextPart, or agents.Text in workflow code), and text over the
// budget goes to a mount as a file; for text within the budget TextParts
// is one part, as TextPart.
func TextParts(s string) []ContentPart {
	parts := []ContentPart{}
	for len(s) > MaxInlineTextBytes {
		cut := MaxInlineTextBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		parts = append(parts, TextPart(s[:cut]))
		s = s[cut:]
	}
	return append(parts, TextPart(s))
}

// TextOf joins a TaskIO's text parts: the text TextParts split.
func TextOf(io TaskIO) string {
	var b strings.Builder
	for _, p := range io.Message {
		if p.Text != nil {
			b.WriteString(*p.Text)
		}
	}
	return b.String()
}

// TaskIO is one conversational entry: the content plus the structured values
// that accompanied it. It serialises flat: well-known keys beside dynamic keys.
type TaskIO struct {
	Message     []ContentPart
	ReceivedAt  string // inputs only; set by the runtime
	CommittedAt string // set by the runtime when the turn enters the conversation
	// Values holds the dynamic keys: parameters on inputs, exposes on outputs.
	Values map[string]json.RawMessage
}

// MarshalJSON writes the flat object; keys come out sorted so equal entries encode equally.
func (t TaskIO) MarshalJSON() ([]byte, error) {
	return marshalFlat("", t)
}

// UnmarshalJSON reads the flat object. Unknown keys become dynamic values.
func (t *TaskIO) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("a TaskIO must be a JSON object: %w", err)
	}
	if raw == nil {
		return fmt.Errorf("a TaskIO must be a JSON object, not null")
	}
	*t = TaskIO{}
	for k, v := range raw {
		switch k {
		case KeyMessage:
			if err := json.Unmarshal(v, &t.Message); err != nil {
				return fmt.Errorf("%q must be a list of content parts: %w", KeyMessage, err)
			}
		case KeyReceivedAt:
			if err := json.Unmarshal(v, &t.ReceivedAt); err != nil {
				return fmt.Errorf("%q must be a string: %w", KeyReceivedAt, err)
			}
		case KeyCommittedAt:
			if err := json.Unmarshal(v, &t.CommittedAt); err != nil {
				return fmt.Errorf("%q must be a string: %w", KeyCommittedAt, err)
			}
		default:
			if t.Values == nil {
				t.Values = map[string]json.RawMessage{}
			}
			t.Values[k] = v
		}
	}
	return nil
}

// HasFiles reports whether any part is a file reference.
func (t TaskIO) HasFiles() bool {
	for _, p := range t.Message {
		if p.File != nil {
			return true
		}
	}
	return false
}

// Entry type of the messages projection.
const (
	TypeInput  = "input"
	TypeOutput = "output"
)

// Message is one entry of the messages projection (docs/contract.md#message):
// the TaskIO exactly as the task holds it plus `type`.
type Message struct {
	Type string
	TaskIO
}

// MarshalJSON writes the flat projection object.
func (m Message) MarshalJSON() ([]byte, error) { return marshalFlat(m.Type, m.TaskIO) }

// UnmarshalJSON reads the flat projection object.
func (m *Message) UnmarshalJSON(b []byte) error {
	if err := m.TaskIO.UnmarshalJSON(b); err != nil {
		return err
	}
	m.Type = ""
	if v, ok := m.TaskIO.Values[KeyType]; ok {
		if err := json.Unmarshal(v, &m.Type); err != nil {
			return fmt.Errorf("%q must be a string: %w", KeyType, err)
		}
		delete(m.TaskIO.Values, KeyType)
		if len(m.TaskIO.Values) == 0 {
			m.TaskIO.Values = nil
		}
	}
	return nil
}

func marshalFlat(typ string, t TaskIO) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	field := func(k string, v any) error {
		enc, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("key %q: %w", k, err)
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(enc)
		return nil
	}
	if typ != "" {
		if err := field(KeyType, typ); err != nil {
			return nil, err
		}
	}
	msg := t.Message
	if msg == nil {
		msg = []ContentPart{}
	}
	if err := field(KeyMessage, msg); err != nil {
		return nil, err
	}
	if t.ReceivedAt != "" {
		if err := field(KeyReceivedAt, t.ReceivedAt); err != nil {
			return nil, err
		}
	}
	if t.CommittedAt != "" {
		if err := field(KeyCommittedAt, t.CommittedAt); err != nil {
			return nil, err
		}
	}
	keys := make([]string, 0, len(t.Values))
	for k := range t.Values {
		if !IsWellKnownKey(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := field(k, t.Values[k]); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// TimeLayout is the wire form of every instant: UTC, RFC 3339, microseconds, ending in Z.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// FormatTime renders t in the wire form.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ParseTime reads an instant written by FormatTime (or any RFC 3339 time).
func ParseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }
