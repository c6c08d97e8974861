package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// The unit tests run the workflow in the SDK's test environment with the
// activities replaced by functions; integration tests run the real ones.

func agentSpec() contract.AgentSpec {
	return contract.AgentSpec{Name: "helper", Model: "test/echo", Instructions: "Be brief."}
}

func textInput(s string) *contract.TaskIO {
	return &contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(s)}}
}

type fakeModel struct {
	calls []activities.ModelTurnInput // as the activity reads them: the turn context filled in
	sent  []activities.ModelTurnInput // as the workflow sent them
	delay time.Duration
}

// newEnv registers the workflow and a model activity that echoes the text of
// the inputs it is given.
func newEnv(t *testing.T, m *fakeModel) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	wf := &Workflows{}
	env.RegisterWorkflowWithOptions(wf.AgentTask, workflow.RegisterOptions{Name: contract.WorkflowType})
	env.RegisterActivityWithOptions(func(ctx context.Context, in activities.ModelTurnInput) (*activities.ModelTurnResult, error) {
		return nil, errors.New("replaced by OnActivity")
	}, activity.RegisterOptions{Name: activities.ModelTurnName})
	env.RegisterActivityWithOptions(func(ctx context.Context, in activities.WriteEntriesInput) error { return nil },
		activity.RegisterOptions{Name: activities.WriteEntriesName})
	call := env.OnActivity(activities.ModelTurnName, mock.Anything, mock.Anything)
	if m.delay > 0 {
		call = call.After(m.delay)
	}
	contexts := callContexts{}
	call.Return(func(ctx context.Context, in activities.ModelTurnInput) (*activities.ModelTurnResult, error) {
		m.sent = append(m.sent, in)
		in = contexts.whole(t, in)
		m.calls = append(m.calls, in)
		var texts []string
		for _, w := range in.Write {
			if w.Entry.Type == contract.TypeInput {
				texts = append(texts, *w.Entry.Message[0].Text)
			}
		}
		return &activities.ModelTurnResult{
			Output:     contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("echo: " + strings.Join(texts, "|"))}},
			StopReason: "end", Model: "echo", Usage: activities.Usage{Usage: contract.Usage{InputTokens: 3, OutputTokens: 2}}, Calls: 1,
		}, nil
	})
	return env
}

func queryMessages(t *testing.T, env *testsuite.TestWorkflowEnvironment, page *contract.MessagesPage) []contract.Message {
	t.Helper()
	var v interface {
		Get(any) error
	}
	var err error
	if page == nil {
		v, err = env.QueryWorkflow(contract.QueryMessages)
	} else {
		v, err = env.QueryWorkflow(contract.QueryMessages, page)
	}
	require.NoError(t, err)
	var out []contract.Message
	require.NoError(t, v.Get(&out))
	return out
}

func queryStatus(t *testing.T, env *testsuite.TestWorkflowEnvironment) contract.Status {
	t.Helper()
	v, err := env.QueryWorkflow(contract.QueryStatus)
	require.NoError(t, err)
	var st contract.Status
	require.NoError(t, v.Get(&st))
	return st
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	require.True(t, strings.HasSuffix(s, "Z"), "instant %q must end in Z", s)
	tm, err := contract.ParseTime(s)
	require.NoError(t, err)
	return tm
}

func appErrorType(t *testing.T, err error) string {
	t.Helper()
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), "want an ApplicationError, got %v", err)
	require.True(t, ae.NonRetryable(), "refusals are not retryable")
	return ae.Type()
}

func TestBadStartFailsBeforeAnyModelCall(t *testing.T) {
	cases := map[string]StartArgs{
		"bad name":                {StartArgs: contract.StartArgs{Agent: contract.AgentSpec{Name: "Bad Name", Model: "test/echo"}}},
		"model without slash":     {StartArgs: contract.StartArgs{Agent: contract.AgentSpec{Name: "a", Model: "gpt"}}},
		"unknown mode":            {StartArgs: contract.StartArgs{Agent: agentSpec(), Mode: "batch"}},
		"well-known parameter":    {StartArgs: contract.StartArgs{Agent: contract.AgentSpec{Name: "a", Model: "t/m", Parameters: json.RawMessage(`{"type":"object","properties":{"received_at":{"type":"string"}}}`)}}},
		"keyword outside subset":  {StartArgs: contract.StartArgs{Agent: contract.AgentSpec{Name: "a", Model: "t/m", Exposes: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string","format":"email"}}}`)}}},
		"input with committed_at": {StartArgs: contract.StartArgs{Agent: agentSpec(), Input: &contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("hi")}, CommittedAt: "2026-01-01T00:00:00.000000Z"}}},
		"oversized text":          {StartArgs: contract.StartArgs{Agent: agentSpec(), Input: textInput(strings.Repeat("x", contract.MaxInlineTextBytes+1))}},
		"carry from a caller":     {StartArgs: contract.StartArgs{Agent: agentSpec()}, Carry: &Carry{}},
		"variables over 256 KiB":  {StartArgs: contract.StartArgs{Agent: agentSpec(), Variables: map[string]json.RawMessage{"big": json.RawMessage(`"` + strings.Repeat("v", contract.MaxVariablesBytes) + `"`)}}},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			m := &fakeModel{}
			env := newEnv(t, m)
			env.ExecuteWorkflow(contract.WorkflowType, args)
			require.True(t, env.IsWorkflowCompleted())
			err := env.GetWorkflowError()
			require.Error(t, err)
			require.Equal(t, contract.ErrInvalidInput, appErrorType(t, err))
			require.Empty(t, m.calls, "no model call on a refused start")
		})
	}
}

// Before rules.streamAll only an agent whose reply is the model's text
// streamed; since, every agent does, and stream changes nothing.
func TestStreamRefusedForWrappedRepliesOnlyUnderOlderRules(t *testing.T) {
	wrapped := map[string]*StartArgs{
		"exposes": {StartArgs: contract.StartArgs{Agent: contract.AgentSpec{Name: "a", Model: "t/m", Exposes: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)}, Stream: true}},
		"mount":   {StartArgs: contract.StartArgs{Agent: contract.AgentSpec{Name: "a", Model: "t/m", Mount: &contract.MountSpec{Root: "task", Name: "files"}}, Stream: true}},
		"capabilities": {StartArgs: contract.StartArgs{Agent: contract.AgentSpec{Name: "a", Model: "t/m",
			Capabilities: []contract.Capability{{Name: "helper", Kind: contract.CapabilityDelegate, Agent: &contract.AgentSpec{Name: "h", Model: "t/m"}}}}, Stream: true}},
	}
	for name, args := range wrapped {
		err := checkStream(args, rulesFor(rulesStreamAll-1))
		require.ErrorContains(t, err, "stream: only an agent that answers in plain text or JSON", name)
		require.NoError(t, checkStream(args, rulesFor(rulesStreamAll)), name)
	}
	plain := &StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec()}}
	require.False(t, streams(plain, rulesFor(rulesStreamAll-1), "run-1", false), "older rules: only when asked")
	require.True(t, streams(plain, rulesFor(rulesStreamAll), "run-1", false), "every task streams")
	require.False(t, streams(plain, rulesFor(rulesStreamAll), "run-1.helper.t1.c0", true), "rules 15: a sub-task does not stream")
	require.True(t, streams(plain, rulesFor(rulesStreamEvents), "run-1.helper.t1.c0", true), "rules 16: it streams under its run")
	require.False(t, streams(plain, rulesFor(rulesStreamEvents), "orders.42", false), "a dotted ID of a task that is no sub-task: not under another's subject")
}

// A streamed task's ID names its broker subject (runs.<task ID>): one
// that cannot is refused at start.
func TestStreamNeedsATaskIDASubjectCanCarry(t *testing.T) {
	m := &fakeModel{}
	env := newEnv(t, m)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "orders.42"})
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Stream: true}})
	require.True(t, env.IsWorkflowCompleted())
	err := env.GetWorkflowError()
	require.Equal(t, contract.ErrInvalidInput, appErrorType(t, err))
	require.Contains(t, err.Error(), "stream")
	require.Empty(t, m.calls)
	require.NoError(t, CheckStreamID("run-abc_DEF-1"))
}

func TestMalformedStartArgumentIsRefusedNotRetried(t *testing.T) {
	env := newEnv(t, &fakeModel{})
	env.ExecuteWorkflow(contract.WorkflowType, map[string]any{"agent": "not an object"})
	require.Equal(t, contract.ErrInvalidInput, appErrorType(t, env.GetWorkflowError()))

	env = newEnv(t, &fakeModel{})
	env.ExecuteWorkflow(contract.WorkflowType, map[string]any{"agent": agentSpec(), "outptu": map[string]any{}})
	err := env.GetWorkflowError()
	require.Equal(t, contract.ErrInvalidInput, appErrorType(t, err))
	require.Contains(t, err.Error(), "outptu")
}

func TestSingleTurnCommitsInputThenOutput(t *testing.T) {
	m := &fakeModel{}
	env := newEnv(t, m)
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Input: textInput("hello"), Mode: contract.ModeSingle}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res contract.Result
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.StateCompleted, res.State)
	require.Equal(t, contract.EndedBySingle, res.EndedBy)
	require.Equal(t, 1, res.Turns)
	require.Equal(t, "echo: hello", *res.LastOutput.Message[0].Text)
	require.Equal(t, contract.Usage{InputTokens: 3, OutputTokens: 2}, res.Usage)

	msgs := queryMessages(t, env, nil)
	require.Len(t, msgs, 2)
	in, out := msgs[0], msgs[1]
	require.Equal(t, contract.TypeInput, in.Type)
	require.Equal(t, contract.TypeOutput, out.Type)
	require.NotEmpty(t, in.ReceivedAt)
	require.Empty(t, out.ReceivedAt, "an output has no received_at")
	require.True(t, mustTime(t, out.CommittedAt).After(mustTime(t, in.CommittedAt)))
	require.False(t, mustTime(t, in.CommittedAt).Before(mustTime(t, in.ReceivedAt)))
	// The model activity got the new entry and a reference, not a transcript.
	require.Len(t, m.calls, 1)
	require.Equal(t, 1, m.calls[0].End)
	require.Len(t, m.calls[0].Write, 1)
	require.Equal(t, 0, m.calls[0].Write[0].Position)
}

func TestInputsSentDuringATurnAreQueuedAndCommittedTogether(t *testing.T) {
	m := &fakeModel{delay: 10 * time.Second}
	env := newEnv(t, m)
	var midTurn []contract.Message
	var midStatus contract.Status
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.SignalInput, textInput("second"))
		env.UpdateWorkflow(contract.UpdateSend, "u1", &updateCallbacks{t: t, want: true}, textInput("third"))
	}, 2*time.Second)
	env.RegisterDelayedCallback(func() {
		midTurn = queryMessages(t, env, nil)
		midStatus = queryStatus(t, env)
	}, 3*time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalClose, nil) }, 12*time.Second)
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Input: textInput("first")}})
	require.NoError(t, env.GetWorkflowError())

	// While turn 1 ran: "first" committed, the other two received but not committed.
	require.Len(t, midTurn, 3)
	require.NotEmpty(t, midTurn[0].CommittedAt)
	require.Empty(t, midTurn[1].CommittedAt, "absent committed_at is the read receipt")
	require.Empty(t, midTurn[2].CommittedAt)
	require.Equal(t, contract.StateWorking, midStatus.State)
	require.Equal(t, 2, midStatus.Queued)

	msgs := queryMessages(t, env, nil)
	// first, output 1, second+third (one commit), output 2
	require.Len(t, msgs, 5)
	types := []string{}
	for _, m := range msgs {
		types = append(types, m.Type)
	}
	require.Equal(t, []string{"input", "output", "input", "input", "output"}, types)
	require.Equal(t, msgs[2].CommittedAt, msgs[3].CommittedAt, "one model call commits every queued input")
	require.Len(t, m.calls, 2)
	require.Equal(t, "echo: second|third", *msgs[4].Message[0].Text)
	// Commit order differs from send order: "second" was received before output 1.
	require.True(t, mustTime(t, msgs[2].ReceivedAt).Before(mustTime(t, msgs[1].CommittedAt)))
	requireOrdered(t, msgs)
	// The second call stamps output 1 instead of re-sending it.
	require.Len(t, m.calls[1].Stamps, 1)
	require.Equal(t, 1, m.calls[1].Stamps[0].Position)
	require.Len(t, m.calls[1].Write, 2)
}

// requireOrdered checks docs/contract.md's ordering: committed_at never decreases,
// strictly increases across turns, and an output answers every input
// committed after the preceding output.
func requireOrdered(t *testing.T, msgs []contract.Message) {
	t.Helper()
	var prev time.Time
	prevType := ""
	for i, m := range msgs {
		if m.CommittedAt == "" {
			for _, rest := range msgs[i:] {
				require.Empty(t, rest.CommittedAt, "uncommitted inputs come last")
			}
			return
		}
		c := mustTime(t, m.CommittedAt)
		if i > 0 {
			if m.Type == contract.TypeInput && prevType == contract.TypeInput {
				require.False(t, c.Before(prev), "entry %d", i)
			} else {
				require.True(t, c.After(prev), "entry %d must be strictly after the previous turn", i)
			}
		}
		prev, prevType = c, m.Type
	}
}

type updateCallbacks struct {
	t      *testing.T
	want   bool
	err    error
	result contract.SendResult
	done   bool
}

func (u *updateCallbacks) Accept()          {}
func (u *updateCallbacks) Reject(err error) { u.err, u.done = err, true }
func (u *updateCallbacks) Complete(success any, err error) {
	u.done = true
	u.err = err
	if r, ok := success.(contract.SendResult); ok {
		u.result = r
	}
}

func TestCancelTurnCommitsItsInputAndProducesNoOutput(t *testing.T) {
	m := &fakeModel{delay: time.Hour}
	env := newEnv(t, m)
	var during contract.Status
	env.RegisterDelayedCallback(func() {
		during = queryStatus(t, env)
		env.SignalWorkflow(contract.SignalCancelTurn, nil)
	}, time.Minute)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.SignalCancelTurn, "ignored") // no turn running: does nothing
		env.SignalWorkflow(contract.SignalClose, nil)
	}, 2*time.Minute)
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Input: textInput("stop me")}})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, contract.StateWorking, during.State)
	msgs := queryMessages(t, env, nil)
	require.Len(t, msgs, 1)
	require.Equal(t, contract.TypeInput, msgs[0].Type)
	require.NotEmpty(t, msgs[0].CommittedAt, "a canceled turn commits its input")
	st := queryStatus(t, env)
	require.Equal(t, 1, st.Turns)
	require.Equal(t, 0, st.Outputs)
	require.True(t, st.LastTurn.Canceled)
}

func TestCanceledTurnInputsAreResentToTheNextCall(t *testing.T) {
	m := &fakeModel{delay: 30 * time.Second}
	env := newEnv(t, m)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalCancelTurn, nil) }, 10*time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalInput, textInput("next")) }, 20*time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalClose, nil) }, 2*time.Minute)
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Input: textInput("canceled")}})
	require.NoError(t, env.GetWorkflowError())
	msgs := queryMessages(t, env, nil)
	require.Len(t, msgs, 3) // canceled input, next, output
	require.Equal(t, "echo: canceled|next", *msgs[2].Message[0].Text,
		"the canceled turn's input was never made durable, so the next call writes it")
	requireOrdered(t, msgs)
}

func TestUpdateRefusesBadInputAndWritesNothing(t *testing.T) {
	params := json.RawMessage(`{"type":"object","properties":{"ticket_id":{"type":"integer"}},"required":["ticket_id"]}`)
	spec := agentSpec()
	spec.Parameters = params
	env := newEnv(t, &fakeModel{})
	bad := map[string]*updateCallbacks{}
	inputs := map[string]any{
		"missing required": map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "hi"}}},
		"wrong type":       map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "hi"}}, "ticket_id": "seven"},
		"well-known key":   map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "hi"}}, "ticket_id": 1, "received_at": "2026-01-01T00:00:00Z"},
		"no message":       map[string]any{"ticket_id": 1},
		"not an object":    "hello",
		"oversized":        map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": strings.Repeat("y", 100_001)}}, "ticket_id": 1},
		"undeclared key":   map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "hi"}}, "ticket_id": 1, "extra": true},
	}
	good := &updateCallbacks{t: t}
	var before, after []contract.Message
	env.RegisterDelayedCallback(func() {
		before = queryMessages(t, env, nil)
		for name, in := range inputs {
			cb := &updateCallbacks{t: t}
			bad[name] = cb
			env.UpdateWorkflow(contract.UpdateSend, name, cb, in)
		}
		after = queryMessages(t, env, nil)
		env.UpdateWorkflow(contract.UpdateSend, "good", good, map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "ok"}}, "ticket_id": 7})
	}, time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalClose, nil) }, time.Minute)
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: spec}})
	require.NoError(t, env.GetWorkflowError())
	for name, cb := range bad {
		require.True(t, cb.done, name)
		require.Error(t, cb.err, name)
		require.Contains(t, cb.err.Error(), "", name)
	}
	require.Contains(t, bad["oversized"].err.Error(), "send the text as a file reference")
	require.Contains(t, bad["missing required"].err.Error(), "ticket_id")
	require.Equal(t, before, after, "a refused update writes nothing")
	require.NoError(t, good.err)
	require.NotEmpty(t, good.result.ReceivedAt)
	msgs := queryMessages(t, env, nil)
	require.Len(t, msgs, 2)
	require.JSONEq(t, `7`, string(msgs[0].Values["ticket_id"]))
	require.Equal(t, good.result.ReceivedAt, msgs[0].ReceivedAt)
}

func TestBadSignalIsRecordedAndChangesNothingElse(t *testing.T) {
	env := newEnv(t, &fakeModel{})
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.SignalInput, map[string]any{"message": []any{map[string]any{"mimeType": "image/png", "text": "x"}}})
		env.SignalWorkflow(contract.SignalInput, 42)
	}, time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalClose, nil) }, time.Minute)
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Input: textInput("kept")}})
	require.NoError(t, env.GetWorkflowError())
	st := queryStatus(t, env)
	require.Equal(t, 2, st.Rejected)
	require.Equal(t, contract.ErrInvalidInput, st.LastRejection.Type)
	require.Contains(t, st.LastRejection.Message, "TaskIO")
	msgs := queryMessages(t, env, nil)
	require.Len(t, msgs, 2, "the earlier input and its answer are untouched")
	require.Equal(t, "kept", *msgs[0].Message[0].Text)
}

func TestCloseAnswersQueuedInputsFirst(t *testing.T) {
	m := &fakeModel{delay: 5 * time.Second}
	env := newEnv(t, m)
	refused := &updateCallbacks{t: t}
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(contract.SignalInput, textInput("queued"))
		env.SignalWorkflow(contract.SignalClose, nil)
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(contract.UpdateSend, "late", refused, textInput("too late"))
	}, 2*time.Second)
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Input: textInput("first")}})
	require.NoError(t, env.GetWorkflowError())
	var res contract.Result
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.EndedByClose, res.EndedBy)
	require.Equal(t, 2, res.Turns)
	require.Equal(t, "echo: queued", *res.LastOutput.Message[0].Text)
	require.Error(t, refused.err)
	require.Contains(t, refused.err.Error(), "closing")
}

func TestSingleModeRefusesFurtherInputs(t *testing.T) {
	m := &fakeModel{delay: 5 * time.Second}
	env := newEnv(t, m)
	refused := &updateCallbacks{t: t}
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(contract.UpdateSend, "second", refused, textInput("second"))
	}, time.Second)
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Input: textInput("only"), Mode: contract.ModeSingle}})
	require.NoError(t, env.GetWorkflowError())
	require.Error(t, refused.err)
	require.Contains(t, refused.err.Error(), "single-mode")
	require.Len(t, m.calls, 1)
}

func TestIdleTimeoutEndsTheConversation(t *testing.T) {
	m := &fakeModel{}
	env := newEnv(t, m)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalInput, textInput("again")) }, 20*time.Minute)
	start := env.Now()
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Input: textInput("hi"), IdleTimeout: "30m"}})
	require.NoError(t, env.GetWorkflowError())
	var res contract.Result
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.EndedByIdle, res.EndedBy)
	require.Equal(t, 2, res.Turns)
	// The input at 20m restarted the idle clock: the task ended 30m after it.
	elapsed := env.Now().Sub(start)
	require.GreaterOrEqual(t, elapsed, 49*time.Minute)
	require.Less(t, elapsed, 61*time.Minute)
}

func TestContinueAsNewCarriesStateAndQueue(t *testing.T) {
	m := &fakeModel{}
	env := newEnv(t, m)
	saved := historyLength
	defer func() { historyLength = saved }()
	historyLength = func(workflow.Context) int { return 10 * len(m.calls) } // a turn is 10 events
	for i := 0; i < 12; i++ {
		i := i
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalInput, textInput(fmt.Sprintf("m%d", i))) }, time.Duration(i+1)*time.Minute)
	}
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), ContinueAsNewEvents: 100}})
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(err, &can), "want continue-as-new, got %v", err)
	require.Greater(t, len(m.calls), 3)
	require.Equal(t, contract.WorkflowType, can.WorkflowType.Name)
	var next StartArgs
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.Carry)
	c := next.Carry
	require.Equal(t, c.Turns*2, c.length(), "every turn committed one input and one output")
	require.Equal(t, c.length()-1, c.LastOutputPos)
	require.Equal(t, c.LastOutputPos, c.Base, "only the last output stays inline; the rest is in the transcript")
	require.Equal(t, c.Base, c.Durable)
	require.NotEmpty(t, c.Transcript.TaskID)
	require.Equal(t, 1, c.Run)
}

func TestSingleModeEndsAfterACanceledTurn(t *testing.T) {
	m := &fakeModel{delay: time.Hour}
	env := newEnv(t, m)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalCancelTurn, nil) }, time.Minute)
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Input: textInput("only"), Mode: contract.ModeSingle}})
	require.NoError(t, env.GetWorkflowError())
	var res contract.Result
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.EndedBySingle, res.EndedBy)
	require.Nil(t, res.LastOutput, "a canceled turn produces no output")
	require.Equal(t, 1, res.Messages)
}

func TestModelErrorFailsTheTaskWithItsType(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	wf := &Workflows{}
	env.RegisterWorkflowWithOptions(wf.AgentTask, workflow.RegisterOptions{Name: contract.WorkflowType})
	env.RegisterActivityWithOptions(func(ctx context.Context, in activities.ModelTurnInput) (*activities.ModelTurnResult, error) {
		return nil, temporal.NewNonRetryableApplicationError("the endpoint said no", contract.ErrModel, nil)
	}, activity.RegisterOptions{Name: activities.ModelTurnName})
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Input: textInput("hi")}})
	err := env.GetWorkflowError()
	require.Equal(t, contract.ErrModel, appErrorType(t, err))
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae))
	require.Equal(t, "the endpoint said no", ae.Message())
	st := queryStatus(t, env)
	require.Equal(t, contract.StateFailed, st.State)
	require.Equal(t, &contract.ErrorInfo{Type: contract.ErrModel, Message: "the endpoint said no"}, st.Error)
}

// A turn longer than the idle timeout keeps the task alive without a timer
// per idle period: one timer runs out during the turn, the next starts when
// the turn ends (rulesBounds).
func TestLongTurnArmsOneIdleTimerPerIdlePeriod(t *testing.T) {
	m := &fakeModel{delay: 35 * time.Minute}
	env := newEnv(t, m)
	timers := 0
	env.SetOnTimerScheduledListener(func(timerID string, duration time.Duration) { timers++ })
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Input: textInput("slow"), IdleTimeout: "10m"}})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res contract.Result
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, contract.EndedByIdle, res.EndedBy)
	require.Equal(t, 1, res.Turns)
	require.Equal(t, 2, timers, "one timer ran out during the 35-minute turn, one after it")
}
