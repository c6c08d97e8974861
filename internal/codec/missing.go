package codec

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
)

// MissingKeyError: data encrypted with a key this process does not hold
// (or, Wrong, with other key material under the same ID). It names the key
// ID and AGENT_CODEC_KEYS, the variable that supplies it. Every one is
// recorded for the process (MissingKeys, ReportMissingKeys).
type MissingKeyError struct {
	KeyID string   // the key the data was encrypted with
	Have  []string // the key IDs this process holds; none: AGENT_CODEC_KEYS is not set
	Wrong bool     // AGENT_CODEC_KEYS lists KeyID, but with other key material
}

func (e *MissingKeyError) Error() string {
	switch {
	case e.Wrong:
		return fmt.Sprintf("codec: data does not decrypt with key %q of %s (another key under the same id, or corrupted data): give every process the key it was encrypted with", e.KeyID, EnvKeys)
	case len(e.Have) == 0:
		return fmt.Sprintf("codec: encrypted with key %q, but %s is not set in this process: set it to the keys this data was written with (%q among them) and restart", e.KeyID, EnvKeys, e.KeyID)
	default:
		return fmt.Sprintf("codec: encrypted with key %q, which is not among %s (%s) in this process: list that key again and restart", e.KeyID, EnvKeys, strings.Join(e.Have, ", "))
	}
}

// Is makes a missing key (not a wrong one) an ErrUnknownKey.
func (e *MissingKeyError) Is(target error) bool { return target == ErrUnknownKey && !e.Wrong }

// missingKey builds a MissingKeyError and records it.
func missingKey(id string, have []string) *MissingKeyError {
	e := &MissingKeyError{KeyID: id, Have: have}
	noteMissing(e)
	return e
}

// MissingKey is what the process has met of one key it does not hold.
type MissingKey struct {
	KeyID       string
	Err         *MissingKeyError // the last one
	Count       int
	First, Last time.Time
}

// ReportEvery is how often ReportMissingKeys' function hears of one key:
// at its first meeting, then at most once in this interval.
const ReportEvery = time.Minute

var missing struct {
	mu       sync.Mutex
	byID     map[string]*MissingKey
	reported map[string]time.Time
	report   func(MissingKey)
}

func noteMissing(e *MissingKeyError) {
	now := time.Now()
	missing.mu.Lock()
	if missing.byID == nil {
		missing.byID, missing.reported = map[string]*MissingKey{}, map[string]time.Time{}
	}
	m := missing.byID[e.KeyID]
	if m == nil {
		m = &MissingKey{KeyID: e.KeyID, First: now}
		missing.byID[e.KeyID] = m
	}
	m.Err, m.Count, m.Last = e, m.Count+1, now
	seen := *m
	report := missing.report
	if report != nil && now.Sub(missing.reported[e.KeyID]) < ReportEvery {
		report = nil
	}
	if report != nil {
		missing.reported[e.KeyID] = now
	}
	missing.mu.Unlock()
	if report != nil {
		report(seen)
	}
}

// MissingKeys lists the keys this process has met data encrypted with and
// does not hold, the most recently met first; none while it has met none.
func MissingKeys() []MissingKey {
	missing.mu.Lock()
	defer missing.mu.Unlock()
	out := make([]MissingKey, 0, len(missing.byID))
	for _, m := range missing.byID {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b MissingKey) int { return b.Last.Compare(a.Last) })
	return out
}

// ForgetMissingKeys clears what MissingKeys lists (tests).
func ForgetMissingKeys() {
	missing.mu.Lock()
	missing.byID, missing.reported = nil, nil
	missing.mu.Unlock()
}

// ReportMissingKeys has f told of every key the process meets data
// encrypted with and does not hold: when first met, then at most every
// ReportEvery while it is met again. nil stops the reports.
func ReportMissingKeys(f func(MissingKey)) {
	missing.mu.Lock()
	missing.report = f
	missing.mu.Unlock()
}

// LogMissingKeys reports missing keys (ReportMissingKeys) to l at error
// level, naming the key and the variable.
func LogMissingKeys(l log.Logger) {
	if l == nil {
		return
	}
	ReportMissingKeys(func(m MissingKey) {
		l.Error("data encrypted with a key this process does not hold: list it in "+EnvKeys+" and restart; "+
			"workflows that need it fail their workflow tasks (retried, nothing is lost) until then",
			"key_id", m.KeyID, "variable", EnvKeys, "error", m.Err.Error(), "times", m.Count, "first", m.First.UTC().Format(time.RFC3339))
	})
}

// HealthLines are the /healthz lines of the keys met missing, one a key,
// each ending in a newline; "" when none:
//
//	codec: key "k1" missing: encrypted with key "k1", but AGENT_CODEC_KEYS is not set in this process: ... (met 3 times, last 12s ago)
func HealthLines() string {
	var b strings.Builder
	for _, m := range MissingKeys() {
		times := "once"
		if m.Count > 1 {
			times = fmt.Sprintf("%d times", m.Count)
		}
		fmt.Fprintf(&b, "codec: key %q missing: %s (met %s, last %s ago)\n",
			m.KeyID, strings.TrimPrefix(m.Err.Error(), "codec: "), times, time.Since(m.Last).Round(time.Second))
	}
	return b.String()
}

// dataConverter is the codec's data converter: a payload under a key the
// process does not hold is a *MissingKeyError, and inside a workflow task
// a panic, so that the SDK fails the workflow task (which Temporal retries,
// and which names the key as its cause) instead of handing the error to
// the workflow. Handed to the workflow, the error would fail the run (its
// start arguments), reject an update that history says was accepted (a
// replay then reports the workflow as nondeterministic: "missing replay
// command for WorkflowExecutionUpdateAccepted"), or read as an activity's
// failure.
type dataConverter struct {
	converter.DataConverter
}

var _ converter.DataConverterWithSerializationContext = dataConverter{}

func (d dataConverter) FromPayload(p *commonpb.Payload, v any) error {
	return failTask(d.DataConverter.FromPayload(p, v))
}

func (d dataConverter) FromPayloads(p *commonpb.Payloads, v ...any) error {
	return failTask(d.DataConverter.FromPayloads(p, v...))
}

func (d dataConverter) WithSerializationContext(sc converter.SerializationContext) converter.DataConverter {
	return dataConverter{converter.WithDataConverterSerializationContext(d.DataConverter, sc)}
}

// failTask panics with a missing key met inside a workflow task; other
// errors, and missing keys met anywhere else (clients, activities, queries),
// are returned.
func failTask(err error) error {
	var m *MissingKeyError
	if err == nil || !errors.As(err, &m) || !inWorkflowTask() {
		return err
	}
	panic(fmt.Errorf("the workflow task cannot read its history: %w (the task is retried until then, nothing is lost)", m))
}

// Frames that run workflow code or apply history events in the SDK: a
// workflow coroutine (the workflow function, its goroutines, signal and
// update handlers) and the event and message handlers. Each recovers a
// panic as a failed workflow task. Queries are not among them: their
// errors go to the caller.
var workflowTaskFrames = []string{
	"go.temporal.io/sdk/internal.(*coroutineState).",
	"go.temporal.io/sdk/internal.(*workflowExecutionEventHandlerImpl).ProcessEvent",
	"go.temporal.io/sdk/internal.(*workflowExecutionEventHandlerImpl).ProcessMessage",
}

// inWorkflowTask says whether the caller runs inside the SDK's processing
// of a workflow task (only asked once a key is found missing).
func inWorkflowTask() bool {
	pcs := make([]uintptr, 1024)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		for _, w := range workflowTaskFrames {
			if strings.HasPrefix(f.Function, w) {
				return true
			}
		}
		if !more {
			return false
		}
	}
}
