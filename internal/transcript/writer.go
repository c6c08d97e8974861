package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/agenttask/agenttask/contract"
)

// Writer is who writes an object: the workflow run an activity attempt
// serves and when that attempt started, by the Temporal server's clock.
//
// A Temporal reset (the Web UI's Reset button, ResetWorkflowExecution)
// replays a run up to a workflow task and carries on from there in a new
// run, which writes the positions the replaced run wrote after that point
// again, with other entries. Only one run of a workflow is open at a time
// and a closed run never reopens, so of two attempts of different runs, the
// one that started later belongs to the run that replaced the other's (or
// to a successor of it): that is the rule writes follow (decide).
type Writer struct {
	Run     string    `json:"run"`
	Started time.Time `json:"started"`
}

type writerKey struct{}
type perRunKey struct{}

// WithWriter makes the writes and reads under ctx those of w (tests; code
// outside activities). In an activity the writer is the activity's own
// (its workflow run, its attempt's start) without it.
func WithWriter(ctx context.Context, w Writer) context.Context {
	return context.WithValue(ctx, writerKey{}, w)
}

// PerRun marks a stash object whose value belongs to the run that writes
// it (an output before it is stamped, a streamed answer, a continue-as-new
// part), as opposed to a value named by its content:
//
//   - PutOnce under it replaces a value that an earlier run stored (a run a
//     reset replaced), or one whose writer is unknown, instead of adopting
//     it; a value stored by the writer's own run is adopted as always, and
//     so is one a later run stored (the writer's run was replaced: its
//     value no longer matters).
//   - GetOnce under it finds only a value the reader's own run stored.
func PerRun(ctx context.Context) context.Context {
	return context.WithValue(ctx, perRunKey{}, true)
}

func isPerRun(ctx context.Context) bool { v, _ := ctx.Value(perRunKey{}).(bool); return v }

// WriterOf is the writer of calls under ctx: set by WithWriter, else the
// activity's, else none (the zero Writer: a query, a tool).
func WriterOf(ctx context.Context) Writer {
	if w, ok := ctx.Value(writerKey{}).(Writer); ok {
		return w
	}
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		if info.WorkflowExecution.RunID != "" {
			return Writer{Run: info.WorkflowExecution.RunID, Started: info.StartedTime.UTC()}
		}
	}
	return Writer{}
}

// verdict is what a write does about a different value already stored.
type verdict int

const (
	conflict   verdict = iota // the same run wrote something else (or the writer is unknown): refused
	replace                   // an earlier run wrote it, or nobody known did: this writer's value takes its place
	superseded                // a later run wrote it: this writer's run was replaced
)

// decide applies the rule to a different value stored by stored, which w
// now writes.
func decide(stored, w Writer) verdict {
	switch {
	case w.Run == "":
		return conflict // no identity: what every write did before runs were told apart
	case stored.Run == "":
		return replace // written before writers were recorded, or outside an activity
	case stored.Run == w.Run:
		return conflict
	case stored.Started.Before(w.Started):
		return replace
	default:
		return superseded
	}
}

// The writer is recorded inside the object, as one more JSON member that
// every reader's decoder ignores, so objects stay readable by any version:
// in a contract.Message (an entry, an output before it is stamped) as the
// first member of its first content part (a top-level key would read as a
// dynamic value), in other JSON objects as their first member. A value
// that is not a JSON object records no writer (it counts as unknown).
const (
	stampMember  = `"transcriptWriter":`
	messageStart = `"message":[{`
)

// stampOffset is where the writer's member begins in an object the store
// stamped, or -1.
func stampOffset(raw []byte) int {
	if len(raw) == 0 || raw[0] != '{' {
		return -1
	}
	if bytes.HasPrefix(raw[1:], []byte(stampMember)) {
		return 1
	}
	i := partsOffset(raw)
	if i < 0 || !bytes.HasPrefix(raw[i:], []byte(stampMember)) {
		return -1
	}
	return i
}

// partsOffset is where the first content part's members begin in an
// encoded contract.Message ({"type":"…","message":[{ …), or -1.
func partsOffset(raw []byte) int {
	if len(raw) == 0 || raw[0] != '{' {
		return -1
	}
	i := 1
	if t := []byte(`"type":"`); bytes.HasPrefix(raw[i:], t) {
		i += len(t)
		end := bytes.IndexByte(raw[i:], '"')
		if end < 0 || bytes.IndexByte(raw[i:i+end], '\\') >= 0 {
			return -1
		}
		i += end + 1
		if i >= len(raw) || raw[i] != ',' {
			return -1
		}
		i++
	}
	if !bytes.HasPrefix(raw[i:], []byte(messageStart)) {
		return -1
	}
	return i + len(messageStart)
}

// stamp records w in content, the JSON of v: inside the first content part
// of a Message, first in any other object; content as it is when there is
// no writer or no place for one.
func stamp(content []byte, v any, w Writer) []byte {
	if w.Run == "" {
		return content
	}
	at := -1
	switch v.(type) {
	case contract.Message, *contract.Message:
		at = partsOffset(content)
	default:
		if len(content) > 1 && content[0] == '{' {
			at = 1
		}
	}
	if at < 0 || at >= len(content) {
		return content
	}
	sw, _ := json.Marshal(w)
	out := make([]byte, 0, len(content)+len(stampMember)+len(sw)+1)
	out = append(out, content[:at]...)
	out = append(out, stampMember...)
	out = append(out, sw...)
	if content[at] != '}' { // more members follow
		out = append(out, ',')
	}
	return append(out, content[at:]...)
}

// unstamp splits a stored object into its value as written (without the
// writer's member) and its writer (zero when it records none).
func unstamp(raw []byte) ([]byte, Writer) {
	at := stampOffset(raw)
	if at < 0 {
		return raw, Writer{}
	}
	from := at + len(stampMember)
	dec := json.NewDecoder(bytes.NewReader(raw[from:]))
	var w Writer
	if err := dec.Decode(&w); err != nil || w.Run == "" {
		return raw, Writer{}
	}
	end := from + int(dec.InputOffset())
	switch {
	case end < len(raw) && raw[end] == ',':
		end++
	case end < len(raw) && raw[end] == '}':
	default:
		return raw, Writer{}
	}
	out := make([]byte, 0, len(raw)-(end-at))
	return append(append(out, raw[:at]...), raw[end:]...), w
}
