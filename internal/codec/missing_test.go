package codec

import (
	"errors"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	sdkactivity "go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

func resetMissing() {
	ForgetMissingKeys()
	ReportMissingKeys(nil)
}

// A payload under a key the process does not hold is an error naming the
// key and AGENT_CODEC_KEYS, with keys that do not list it and with none at
// all (where the SDK's own converter said only that binary/encrypted is
// not an encoding it knows), and the process remembers it for /healthz.
func TestMissingKeyIsNamed(t *testing.T) {
	resetMissing()
	defer resetMissing()
	var reports []MissingKey
	ReportMissingKeys(func(m MissingKey) { reports = append(reports, m) })

	p, err := mustCodec(t, Keys{"k1": newKey(t)}, "k1").DataConverter().ToPayload("written under k1")
	if err != nil {
		t.Fatal(err)
	}
	var s string
	err = mustCodec(t, Keys{"k2": newKey(t)}, "k2").DataConverter().FromPayload(p, &s)
	var m *MissingKeyError
	if !errors.As(err, &m) || m.KeyID != "k1" || !errors.Is(err, ErrUnknownKey) ||
		!strings.Contains(err.Error(), `key "k1", which is not among AGENT_CODEC_KEYS (k2)`) {
		t.Fatalf("keys without k1: %v", err)
	}

	var none *Codec
	err = none.DataConverter().FromPayload(p, &s)
	if !errors.As(err, &m) || m.KeyID != "k1" || len(m.Have) != 0 || !errors.Is(err, ErrUnknownKey) ||
		!strings.Contains(err.Error(), `key "k1", but AGENT_CODEC_KEYS is not set`) {
		t.Fatalf("no keys: %v", err)
	}
	if _, err := none.Decode([]*commonpb.Payload{p}); !errors.As(err, &m) {
		t.Fatalf("nil codec's Decode: %v", err)
	}

	got := MissingKeys()
	if len(got) != 1 || got[0].KeyID != "k1" || got[0].Count != 3 || got[0].Err == nil || len(got[0].Err.Have) != 0 {
		t.Fatalf("recorded: %+v", got)
	}
	if len(reports) != 1 || reports[0].KeyID != "k1" {
		t.Fatalf("reports (one per key per %v): %+v", ReportEvery, reports)
	}
	line := HealthLines()
	if !strings.HasPrefix(line, `codec: key "k1" missing: encrypted with key "k1", but AGENT_CODEC_KEYS is not set`) || !strings.Contains(line, "(met 3 times, last 0s ago)\n") {
		t.Fatalf("health line %q", line)
	}

	// Other key material under the same ID: named too, but not unknown.
	err = mustCodec(t, Keys{"k1": newKey(t)}, "k1").DataConverter().FromPayload(p, &s)
	if !errors.As(err, &m) || !m.Wrong || errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), `key "k1" of AGENT_CODEC_KEYS`) {
		t.Fatalf("wrong key material: %v", err)
	}
	if _, err := none.OpenBlob(append(append(append([]byte{}, BlobMagic...), 2, 'k', '9'), make([]byte, 40)...)); !errors.As(err, &m) || m.KeyID != "k9" {
		t.Fatalf("an object under k9 without keys: %v", err)
	}
}

// Without keys, payloads are written and read in the clear, as before.
func TestNilCodecIsPlain(t *testing.T) {
	var none *Codec
	p, err := none.DataConverter().ToPayload(map[string]int{"n": 1})
	if err != nil || string(p.Metadata[MetadataEncoding]) != "json/plain" {
		t.Fatalf("payload %v, %v", p, err)
	}
	var v map[string]int
	if err := none.DataConverter().FromPayload(p, &v); err != nil || v["n"] != 1 {
		t.Fatalf("%v %v", v, err)
	}
	f := none.FailureConverter().ErrorToFailure(errors.New("in the clear"))
	if f.GetMessage() != "in the clear" || f.GetEncodedAttributes() != nil {
		t.Fatalf("failure %v", f)
	}
}

// splitConverter writes under one key and reads with another codec: a
// workflow given it meets payloads it cannot read.
type splitConverter struct {
	converter.DataConverter                         // reads
	write                   converter.DataConverter // writes
}

func (s splitConverter) ToPayload(v any) (*commonpb.Payload, error) { return s.write.ToPayload(v) }
func (s splitConverter) ToPayloads(v ...any) (*commonpb.Payloads, error) {
	return s.write.ToPayloads(v...)
}

// Inside a workflow task, a missing key fails the task (a panic, which the
// SDK reports as the workflow task's failure and Temporal retries) naming
// the key, for the start arguments, an update's arguments and an
// activity's result; before, the workflow failed (start arguments), the
// update was rejected (on replay: nondeterministic), or the workflow read
// the error as the activity's.
func TestMissingKeyFailsTheWorkflowTask(t *testing.T) {
	resetMissing()
	defer resetMissing()
	k1 := mustCodec(t, Keys{"k1": newKey(t)}, "k1")
	var none *Codec
	dc := dataConverter{splitConverter{DataConverter: converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), none), write: k1.DataConverter()}}
	sealed, err := k1.DataConverter().ToPayloads("an activity's result under k1")
	if err != nil {
		t.Fatal(err)
	}
	activity := func() (*commonpb.Payloads, error) { return sealed, nil } // handed on as it is

	requireTaskFailure := func(t *testing.T, err error) {
		t.Helper()
		var pe *temporal.PanicError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), `key "k1", but AGENT_CODEC_KEYS is not set`) ||
			strings.Contains(strings.ToLower(err.Error()), "nondetermin") {
			t.Fatalf("want the workflow task failed naming k1; got %T %v", err, err)
		}
	}

	t.Run("start arguments", func(t *testing.T) {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		env.SetDataConverter(dc)
		env.ExecuteWorkflow(func(ctx workflow.Context, in string) (string, error) { return in, nil }, "input under k1")
		requireTaskFailure(t, env.GetWorkflowError())
	})

	t.Run("activity result", func(t *testing.T) {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		env.SetDataConverter(dc)
		env.RegisterActivityWithOptions(activity, sdkactivity.RegisterOptions{Name: "Sealed"})
		env.ExecuteWorkflow(func(ctx workflow.Context) (string, error) {
			ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
			var out string
			if err := workflow.ExecuteActivity(ctx, "Sealed").Get(ctx, &out); err != nil {
				return "", temporal.NewNonRetryableApplicationError("read as the activity's failure: "+err.Error(), "X", nil)
			}
			return out, nil
		})
		requireTaskFailure(t, env.GetWorkflowError())
	})

	t.Run("update arguments", func(t *testing.T) {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		env.SetDataConverter(dc)
		rejected := make(chan error, 1)
		env.RegisterDelayedCallback(func() {
			env.UpdateWorkflow("send", "u1", &updateCallbacks{rejected: rejected}, "an update under k1")
		}, time.Second)
		env.ExecuteWorkflow(func(ctx workflow.Context) error {
			if err := workflow.SetUpdateHandler(ctx, "send", func(ctx workflow.Context, s string) error { return nil }); err != nil {
				return err
			}
			return workflow.Await(ctx, func() bool { return false })
		})
		select {
		case err := <-rejected:
			t.Fatalf("the update was rejected (on replay, nondeterminism): %v", err)
		default:
		}
		requireTaskFailure(t, env.GetWorkflowError())
	})

	// Outside a workflow task (a client, an activity, a query), the same
	// payload is an error, never a panic.
	var out string
	if err := dc.FromPayloads(sealed, &out); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("outside a workflow: %v", err)
	}
	if got := MissingKeys(); len(got) != 1 || got[0].Count < 4 {
		t.Fatalf("recorded: %+v", got)
	}
}

type updateCallbacks struct{ rejected chan error }

func (u *updateCallbacks) Accept()             {}
func (u *updateCallbacks) Reject(err error)    { u.rejected <- err }
func (u *updateCallbacks) Complete(any, error) {}
