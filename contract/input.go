package contract

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// CheckInput validates an input TaskIO sent by a caller against the agent and
// returns it normalised: sizeBytes set on every part. The runtime sets
// received_at and committed_at; a caller that sends them is refused. In
// order: those two, a message of 1 to MaxMessageParts parts, each part (its
// sizeBytes, then CheckContentPart), the values (CheckValues), and the
// whole within MaxInputBytes.
func CheckInput(a *Agent, in TaskIO) (TaskIO, error) {
	if in.ReceivedAt != "" {
		return in, Invalid("received_at is set by the runtime when it takes delivery; leave it out")
	}
	if in.CommittedAt != "" {
		return in, Invalid("committed_at is set by the runtime when the input enters the conversation; leave it out")
	}
	if in.Message == nil {
		return in, Invalid("message is required: a list of content parts, e.g. [{\"mimeType\":\"text/plain\",\"text\":\"Hello\"}]")
	}
	if len(in.Message) == 0 {
		return in, Invalid("message must hold at least one content part")
	}
	if len(in.Message) > MaxMessageParts {
		return in, Invalid("message holds %d content parts, more than the %d one input may hold; send the rest in further inputs, or bundle many files into one (an archive)", len(in.Message), MaxMessageParts)
	}
	parts := make([]ContentPart, len(in.Message))
	for i, p := range in.Message {
		if err := checkSizeBytes(fmt.Sprintf("message[%d]", i), p); err != nil {
			return in, err
		}
		np, err := CheckContentPart(a, fmt.Sprintf("message[%d]", i), p)
		if err != nil {
			return in, err
		}
		parts[i] = np
	}
	out := TaskIO{Message: parts, Values: in.Values}
	if err := CheckValues(a, in.Values); err != nil {
		return in, err
	}
	if b, _ := json.Marshal(out); len(b) > MaxInputBytes {
		return in, Invalid("the input is %d bytes serialised, more than the %d one input may carry; split it into several inputs or send large content as files", len(b), MaxInputBytes)
	}
	return out, nil
}

// CheckContentPart checks one content part of an input, path naming it in
// the refusal (such as message[0]): its mimeType, exactly one of inline
// text (text/plain, valid UTF-8, within MaxInlineTextBytes) and a file
// reference in the agent's mount, and its metadata. It returns the part
// with sizeBytes set by the runtime (the text's length; nil for a file,
// measured when the object is checked) and the metadata compacted.
func CheckContentPart(a *Agent, path string, p ContentPart) (ContentPart, error) {
	if p.MimeType == "" {
		return p, Invalid("%s.mimeType is required (\"text/plain\" for inline text)", path)
	}
	hasText, hasFile := p.Text != nil, p.File != nil
	mounted := a.Spec.Mount != nil && a.ParseRef != nil
	switch {
	case hasText && hasFile:
		return p, Invalid("%s: set exactly one of text and file, not both", path)
	case !hasText && !hasFile:
		return p, Invalid("%s: set exactly one of text (inline) and file (a reference in the agent's mount)", path)
	case hasFile && !mounted:
		return p, Invalid("%s.file: this agent has no mount, so it cannot take file references; send inline text of at most %d bytes", path, MaxInlineTextBytes)
	case hasFile:
		if _, err := a.ParseRef(a.Spec.Mount.Root, *p.File); err != nil {
			return p, Invalid("%s.file: %s", path, MessageOf(err))
		}
		if strings.ContainsAny(p.MimeType, " \t\r\n") || !strings.Contains(p.MimeType, "/") {
			return p, Invalid("%s.mimeType: %q is not a media type such as \"image/png\"", path, p.MimeType)
		}
		// sizeBytes is set by the runtime when it checks the object.
		p.SizeBytes = nil
		return checkMetadata(path, p)
	}
	if p.MimeType != "text/plain" {
		return p, Invalid("%s.mimeType: inline text must be \"text/plain\", not %q; other media travel as file references", path, p.MimeType)
	}
	n := len(*p.Text)
	if n > MaxInlineTextBytes {
		if mounted {
			return p, Invalid("%s.text: %d bytes is over the %d-byte inline budget; upload the text to the agent's mount and send a file reference instead (it is never truncated)", path, n, MaxInlineTextBytes)
		}
		return p, Invalid("%s.text: %d bytes is over the %d-byte inline budget, and this agent has no mount to upload it to: give the agent a mount and send the text as a file reference, or send less (it is never truncated)", path, n, MaxInlineTextBytes)
	}
	if !utf8.ValidString(*p.Text) {
		return p, Invalid("%s.text: not valid UTF-8", path)
	}
	p, err := checkMetadata(path, p)
	if err != nil {
		return p, err
	}
	size := int64(n) // the runtime's count replaces what the caller claimed
	p.SizeBytes = &size
	return p, nil
}

func checkMetadata(path string, p ContentPart) (ContentPart, error) {
	if len(p.Metadata) > 0 && string(p.Metadata) != "null" {
		v, err := decodeJSON(p.Metadata)
		if err != nil {
			return p, Invalid("%s.metadata: not valid JSON: %v", path, err)
		}
		if _, ok := v.(map[string]any); !ok {
			return p, Invalid("%s.metadata: must be a JSON object of small annotations", path)
		}
		compact, _ := json.Marshal(v)
		if len(compact) > MaxMetadataBytes {
			return p, Invalid("%s.metadata: %d bytes serialised, over the %d-byte limit; metadata carries small annotations, never payloads", path, len(compact), MaxMetadataBytes)
		}
		p.Metadata = compact
	} else {
		p.Metadata = nil
	}
	return p, nil
}

// CheckValues checks an input's values against the agent's parameters: no
// well-known TaskIO key, none the agent does not declare (unless its
// parameters are open), and every value valid.
func CheckValues(a *Agent, values map[string]json.RawMessage) error {
	keys := make([]string, 0, len(values))
	//workflowcheck:ignore sorted below
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if IsWellKnownKey(k) {
			return Invalid("%q is not an input key; inputs carry message and the agent's parameters", k)
		}
	}
	if a.Parameters == nil {
		if len(keys) > 0 {
			return Invalid("the agent declares no parameters, so %s cannot be sent; send only message", quoteList(keys))
		}
		return nil
	}
	if !a.Parameters.Open() {
		for _, k := range keys {
			if !a.Parameters.Declares(k) {
				return Invalid("%q is not one of the agent's parameters (%s); remove it", k, quoteList(a.Parameters.Properties()))
			}
		}
	}
	if vs := a.Parameters.Validate(values); len(vs) > 0 {
		return Invalid("parameters do not match the agent's schema: %s", JoinViolations(vs))
	}
	return nil
}

// CheckOutput validates the dynamic keys of an output against exposes: every
// declared key present and every value valid.
func CheckOutput(a *Agent, values map[string]json.RawMessage) []Violation {
	if a.Exposes == nil {
		if len(values) == 0 {
			return nil
		}
		keys := make([]string, 0, len(values))
		for k := range values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return []Violation{{Path: "/", Message: "the agent exposes no keys, but the output has " + quoteList(keys)}}
	}
	var out []Violation
	if !a.Exposes.Open() {
		for k := range values {
			if !a.Exposes.Declares(k) {
				out = append(out, Violation{Path: "/" + k, Message: "not declared in the agent's exposes"})
			}
		}
	}
	for _, k := range a.Exposes.Properties() {
		if _, ok := values[k]; !ok {
			out = append(out, Violation{Path: "/" + k, Message: "missing: every declared exposes key must be on every output"})
		}
	}
	if len(out) > 0 {
		return out
	}
	return a.Exposes.Validate(values)
}

func quoteList(ks []string) string {
	q := make([]string, len(ks))
	for i, k := range ks {
		q[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(q, ", ")
}

// MaxMessageParts bounds the content parts of one input.
const MaxMessageParts = 100

// checkSizeBytes: a part's sizeBytes, when the caller gives it, is a
// non-negative byte count; for inline text, exactly the text's length in
// bytes. (A file's is measured by the runtime when it checks the object,
// and replaces the caller's.)
func checkSizeBytes(path string, p ContentPart) error {
	if p.SizeBytes == nil {
		return nil
	}
	n := *p.SizeBytes
	if n < 0 {
		return Invalid("%s.sizeBytes: %d; a size is a non-negative number of bytes (or leave it out: the runtime sets it)", path, n)
	}
	if p.Text != nil && n != int64(len(*p.Text)) {
		return Invalid("%s.sizeBytes: %d, but the text is %d bytes (UTF-8); give its length in bytes or leave sizeBytes out (the runtime sets it)", path, n, len(*p.Text))
	}
	return nil
}
