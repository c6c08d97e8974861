package llm

import (
	"bytes"
	"encoding/json"
)

// encodeChatRequest is json.Marshal(cr), byte for byte, without encoding
// the conversation twice. A message's content is already JSON
// (wireMessages encodes it), and json.Marshal would scan and copy every
// byte of it again to check it, which for a long conversation is most of
// the cost of building a request (the turn's request reaches tens of KB and
// is sent on every turn).
func encodeChatRequest(cr chatRequest) ([]byte, error) {
	msgs := cr.Messages
	cr.Messages = nil
	rest, err := json.Marshal(cr)
	if err != nil {
		return nil, err
	}
	// The first `,"messages":null` is the field: inside the model's name
	// (the one field before it) a quote is escaped, so it cannot occur there.
	const hole = `,"messages":null`
	at := bytes.Index(rest, []byte(hole))
	if at < 0 {
		cr.Messages = msgs // unreachable: the field has no omitempty
		return json.Marshal(cr)
	}
	size := len(rest)
	for _, m := range msgs {
		size += len(m.Content) + len(m.ToolCallID) + 64
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	buf.Write(rest[:at])
	buf.WriteString(`,"messages":[`)
	for i, m := range msgs {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := encodeWireMessage(buf, m); err != nil {
			return nil, err
		}
	}
	buf.WriteByte(']')
	buf.Write(rest[at+len(hole):])
	return buf.Bytes(), nil
}

// encodeWireMessage writes m as json.Marshal would, its content as it is.
func encodeWireMessage(buf *bytes.Buffer, m wireMessage) error {
	buf.WriteString(`{"role":`)
	if plainWord(string(m.Role)) {
		buf.WriteByte('"')
		buf.WriteString(string(m.Role))
		buf.WriteByte('"')
	} else {
		role, err := json.Marshal(m.Role)
		if err != nil {
			return err
		}
		buf.Write(role)
	}
	buf.WriteString(`,"content":`)
	if len(m.Content) == 0 {
		buf.WriteString("null") // json.Marshal's encoding of an empty RawMessage
	} else {
		buf.Write(m.Content)
	}
	if len(m.ToolCalls) > 0 {
		calls, err := json.Marshal(m.ToolCalls)
		if err != nil {
			return err
		}
		buf.WriteString(`,"tool_calls":`)
		buf.Write(calls)
	}
	if m.ToolCallID != "" {
		id, err := json.Marshal(m.ToolCallID)
		if err != nil {
			return err
		}
		buf.WriteString(`,"tool_call_id":`)
		buf.Write(id)
	}
	buf.WriteByte('}')
	return nil
}

// plainWord is true for a non-empty string of ASCII letters, which JSON
// quotes as it is (every role the runtime sends).
func plainWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return s != ""
}
