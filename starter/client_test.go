package starter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/mock"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/workflows"
)

var ctx = context.Background()

func goodArgs() contract.StartArgs {
	in := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("Hello")}}
	return contract.StartArgs{
		Agent: contract.AgentSpec{Name: "helper", Model: "openai/gpt-4o-mini", Instructions: "Be brief."},
		Input: &in,
	}
}

// wantType fails unless err carries the typed error typ.
func wantType(t *testing.T, err error, typ string) *contract.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", typ)
	}
	var se *contract.Error
	if !errors.As(err, &se) || se.Type != typ || contract.TypeOf(err) != typ {
		t.Fatalf("got %T %v, want a *contract.Error of type %s", err, err, typ)
	}
	return se
}

// jsonValue is a query result decoded as the JSON data converter would.
func jsonValue(t *testing.T, v any) *mocks.Value {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	val := mocks.NewEncodedValue(t)
	val.On("Get", mock.Anything).Return(func(ptr any) error { return json.Unmarshal(b, ptr) }).Maybe()
	return val
}

func TestStartRefusesBeforeTheServer(t *testing.T) {
	noParams := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("hi")}, Values: map[string]json.RawMessage{"city": json.RawMessage(`"Paris"`)}}
	cases := map[string]struct {
		mutate func(*contract.StartArgs)
		opts   StartOptions
		want   string
	}{
		"agent name":       {mutate: func(a *contract.StartArgs) { a.Agent.Name = "Bad Name" }, want: "agent.name"},
		"agent model":      {mutate: func(a *contract.StartArgs) { a.Agent.Model = "gpt" }, want: "agent.model"},
		"mode":             {mutate: func(a *contract.StartArgs) { a.Mode = "forever" }, want: "mode"},
		"idle timeout":     {mutate: func(a *contract.StartArgs) { a.IdleTimeout = "soon" }, want: "idleTimeout"},
		"input parameters": {mutate: func(a *contract.StartArgs) { a.Input = &noParams }, want: "input:"},
		"empty input":      {mutate: func(a *contract.StartArgs) { a.Input = &contract.TaskIO{} }, want: "message is required"},
		"task id":          {opts: StartOptions{TaskID: "has space"}, want: "task ID"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := mocks.NewClient(t) // any call to the server fails the test
			args := goodArgs()
			if tc.mutate != nil {
				tc.mutate(&args)
			}
			id, err := New(m, "").Start(ctx, args, tc.opts)
			se := wantType(t, err, contract.ErrInvalidInput)
			if id != "" || !strings.Contains(se.Message, tc.want) {
				t.Fatalf("id %q, message %q: want no ID and a message naming %q", id, se.Message, tc.want)
			}
			m.AssertNotCalled(t, "ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything)
		})
	}
}

func TestStartOptions(t *testing.T) {
	m := mocks.NewClient(t)
	var got client.StartWorkflowOptions
	var arg any
	m.On("ExecuteWorkflow", mock.Anything, mock.Anything, contract.WorkflowType, mock.Anything).
		Run(func(a mock.Arguments) { got, arg = a.Get(1).(client.StartWorkflowOptions), a.Get(3) }).
		Return(mocks.NewWorkflowRun(t), nil).Once()

	args := goodArgs()
	args.Mode = contract.ModeSingle
	id, err := New(m, "my-queue").Start(ctx, args, StartOptions{TaskID: "order-42"})
	if err != nil {
		t.Fatal(err)
	}
	if id != "order-42" || got.ID != "order-42" {
		t.Errorf("task ID %q, workflow ID %q: want order-42", id, got.ID)
	}
	if got.TaskQueue != "my-queue" {
		t.Errorf("task queue %q", got.TaskQueue)
	}
	if got.WorkflowIDReusePolicy != enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE ||
		got.WorkflowIDConflictPolicy != enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL ||
		!got.WorkflowExecutionErrorWhenAlreadyStarted {
		t.Errorf("ID policies: reuse %v, conflict %v, error when started %v", got.WorkflowIDReusePolicy, got.WorkflowIDConflictPolicy, got.WorkflowExecutionErrorWhenAlreadyStarted)
	}
	name, _ := got.TypedSearchAttributes.GetKeyword(temporal.NewSearchAttributeKeyKeyword(contract.SearchAttributeAgentName))
	model, _ := got.TypedSearchAttributes.GetKeyword(temporal.NewSearchAttributeKeyKeyword(contract.SearchAttributeAgentModel))
	state, _ := got.TypedSearchAttributes.GetKeyword(temporal.NewSearchAttributeKeyKeyword(contract.SearchAttributeAgentState))
	if name != "helper" || model != "openai/gpt-4o-mini" || state != contract.AgentStateActive || got.TypedSearchAttributes.Size() != 3 {
		t.Errorf("search attributes: name %q, model %q, state %q, %d in all", name, model, state, got.TypedSearchAttributes.Size())
	}
	if got.StaticSummary != "agent helper · openai/gpt-4o-mini · single" {
		t.Errorf("summary %q", got.StaticSummary)
	}

	// What is sent is what the workflow accepts.
	p, err := converter.GetDefaultDataConverter().ToPayload(arg)
	if err != nil {
		t.Fatal(err)
	}
	sent, _, err := workflows.DecodeStart(converter.NewRawValue(p))
	if err != nil {
		t.Fatalf("the workflow would refuse the argument: %v", err)
	}
	if sent.Mode != contract.ModeSingle || sent.Agent.Name != "helper" || sent.Input == nil || *sent.Input.Message[0].Text != "Hello" {
		t.Errorf("sent %+v", sent)
	}
}

func TestStartDefaults(t *testing.T) {
	m := mocks.NewClient(t)
	var got client.StartWorkflowOptions
	m.On("ExecuteWorkflow", mock.Anything, mock.Anything, contract.WorkflowType, mock.Anything).
		Run(func(a mock.Arguments) { got = a.Get(1).(client.StartWorkflowOptions) }).
		Return(mocks.NewWorkflowRun(t), nil).Twice()

	c := New(m, "")
	id1, err := c.Start(ctx, goodArgs(), StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^task-[a-z2-7]{16}$`).MatchString(id1) || got.ID != id1 {
		t.Errorf("generated ID %q (workflow ID %q)", id1, got.ID)
	}
	if got.TaskQueue != contract.DefaultTaskQueue {
		t.Errorf("task queue %q, want the default", got.TaskQueue)
	}
	if got.StaticSummary != "agent helper · openai/gpt-4o-mini · conversation" {
		t.Errorf("summary %q", got.StaticSummary)
	}
	id2, err := c.Start(ctx, goodArgs(), StartOptions{})
	if err != nil || id2 == id1 {
		t.Errorf("second ID %q (%v) must differ from %q", id2, err, id1)
	}
}

func TestStartWithoutRegisteredSearchAttributes(t *testing.T) {
	m := mocks.NewClient(t)
	var calls []client.StartWorkflowOptions
	record := func(a mock.Arguments) { calls = append(calls, a.Get(1).(client.StartWorkflowOptions)) }
	m.On("ExecuteWorkflow", mock.Anything, mock.Anything, contract.WorkflowType, mock.Anything).
		Run(record).Return(nil, serviceerror.NewInvalidArgument("search attribute AgentName is not defined")).Once()
	m.On("ExecuteWorkflow", mock.Anything, mock.Anything, contract.WorkflowType, mock.Anything).
		Run(record).Return(mocks.NewWorkflowRun(t), nil).Once()

	id, err := New(m, "").Start(ctx, goodArgs(), StartOptions{TaskID: "t1"})
	if err != nil || id != "t1" {
		t.Fatalf("got %q, %v", id, err)
	}
	if len(calls) != 2 || calls[1].TypedSearchAttributes.Size() != 0 || calls[1].ID != "t1" || calls[1].StaticSummary == "" {
		t.Fatalf("want a retry without search attributes, got %+v", calls)
	}
}

func TestStartOtherInvalidArgumentIsNotRetried(t *testing.T) {
	m := mocks.NewClient(t)
	m.On("ExecuteWorkflow", mock.Anything, mock.Anything, contract.WorkflowType, mock.Anything).
		Return(nil, serviceerror.NewInvalidArgument("namespace rate limit")).Once()
	_, err := New(m, "").Start(ctx, goodArgs(), StartOptions{TaskID: "t1"})
	var ia *serviceerror.InvalidArgument
	if !errors.As(err, &ia) || !strings.Contains(err.Error(), `"t1"`) {
		t.Fatalf("got %v, want the wrapped InvalidArgument naming the task", err)
	}
}

func TestStartAlreadyStarted(t *testing.T) {
	m := mocks.NewClient(t)
	m.On("ExecuteWorkflow", mock.Anything, mock.Anything, contract.WorkflowType, mock.Anything).
		Return(nil, serviceerror.NewWorkflowExecutionAlreadyStarted("Workflow execution is already running", "", "run-1")).Once()
	_, err := New(m, "").Start(ctx, goodArgs(), StartOptions{TaskID: "dup"})
	se := wantType(t, err, ErrTaskExists)
	if !strings.Contains(se.Message, `"dup"`) {
		t.Errorf("message %q does not name the task", se.Message)
	}
}

func TestNotFound(t *testing.T) {
	nf := serviceerror.NewNotFound("workflow not found for ID: nope")
	m := mocks.NewClient(t)
	m.On("QueryWorkflow", mock.Anything, "nope", "", contract.QueryStatus).Return(nil, nf)
	m.On("QueryWorkflow", mock.Anything, "nope", "", contract.QueryMessages).Return(nil, nf)
	m.On("QueryWorkflow", mock.Anything, "nope", "", contract.QueryMessages, mock.Anything).Return(nil, nf)
	m.On("SignalWorkflow", mock.Anything, "nope", "", mock.Anything, mock.Anything).Return(nf)
	m.On("UpdateWorkflow", mock.Anything, mock.Anything).Return(nil, nf)
	run := mocks.NewWorkflowRun(t)
	run.On("Get", mock.Anything, mock.Anything).Return(nf)
	m.On("GetWorkflow", mock.Anything, "nope", "").Return(run)

	c := New(m, "")
	errs := map[string]error{}
	_, errs["status"] = c.Status(ctx, "nope")
	_, errs["messages"] = c.Messages(ctx, "nope", nil)
	_, errs["all messages"] = c.AllMessages(ctx, "nope")
	_, errs["send"] = c.Send(ctx, "nope", contract.TaskIO{})
	errs["signal"] = c.Signal(ctx, "nope", contract.TaskIO{})
	errs["close"] = c.Close(ctx, "nope")
	errs["cancel-turn"] = c.CancelTurn(ctx, "nope")
	_, errs["result"] = c.Result(ctx, "nope")
	for op, err := range errs {
		t.Run(op, func(t *testing.T) {
			se := wantType(t, err, ErrTaskNotFound)
			if se.Message != `no task with ID "nope"; check the ID and the namespace` {
				t.Errorf("message %q", se.Message)
			}
		})
	}
}

func TestEndedTaskIsClosed(t *testing.T) {
	done := serviceerror.NewNotFound("workflow execution already completed")
	m := mocks.NewClient(t)
	m.On("UpdateWorkflow", mock.Anything, mock.Anything).Return(nil, done)
	m.On("SignalWorkflow", mock.Anything, "t1", "", contract.SignalInput, mock.Anything).Return(done)
	c := New(m, "")
	_, err := c.Send(ctx, "t1", contract.TaskIO{})
	wantType(t, err, contract.ErrTaskClosed)
	wantType(t, c.Signal(ctx, "t1", contract.TaskIO{}), contract.ErrTaskClosed)
}

func TestSend(t *testing.T) {
	in := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("more")}}
	m := mocks.NewClient(t)
	h := mocks.NewWorkflowUpdateHandle(t)
	h.On("Get", mock.Anything, mock.Anything).Return(func(_ context.Context, ptr any) error {
		*ptr.(*contract.SendResult) = contract.SendResult{ReceivedAt: "2026-01-02T03:04:05.000000Z"}
		return nil
	})
	var got client.UpdateWorkflowOptions
	m.On("UpdateWorkflow", mock.Anything, mock.Anything).
		Run(func(a mock.Arguments) { got = a.Get(1).(client.UpdateWorkflowOptions) }).Return(h, nil)

	res, err := New(m, "").Send(ctx, "t1", in)
	if err != nil || res.ReceivedAt != "2026-01-02T03:04:05.000000Z" {
		t.Fatalf("got %+v, %v", res, err)
	}
	if got.WorkflowID != "t1" || got.RunID != "" || got.UpdateName != contract.UpdateSend ||
		got.WaitForStage != client.WorkflowUpdateStageCompleted || len(got.Args) != 1 {
		t.Fatalf("update options %+v", got)
	}
	if sent, ok := got.Args[0].(contract.TaskIO); !ok || *sent.Message[0].Text != "more" {
		t.Fatalf("update argument %#v", got.Args[0])
	}
}

func TestSendRefusals(t *testing.T) {
	cases := map[string]struct {
		err     error
		typ     string
		message string
	}{
		// What the SDK makes of a *contract.Error returned by the validator.
		"schema error": {
			err:     temporal.NewApplicationError("INVALID_INPUT: message must hold at least one content part", "Error"),
			typ:     contract.ErrInvalidInput,
			message: "message must hold at least one content part",
		},
		"typed application error": {
			err:     temporal.NewApplicationError("the task is closing", contract.ErrTaskClosed),
			typ:     contract.ErrTaskClosed,
			message: "the task is closing",
		},
		"untyped": {
			err:     temporal.NewApplicationError("boom", ""),
			typ:     contract.ErrInternal,
			message: "boom",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := mocks.NewClient(t)
			h := mocks.NewWorkflowUpdateHandle(t)
			h.On("Get", mock.Anything, mock.Anything).Return(tc.err)
			m.On("UpdateWorkflow", mock.Anything, mock.Anything).Return(h, nil)
			_, err := New(m, "").Send(ctx, "t1", contract.TaskIO{})
			if se := wantType(t, err, tc.typ); se.Message != tc.message {
				t.Errorf("message %q, want %q", se.Message, tc.message)
			}
		})
	}
}

func TestSignals(t *testing.T) {
	in := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("x")}}
	m := mocks.NewClient(t)
	m.On("SignalWorkflow", mock.Anything, "t1", "", contract.SignalInput, in).Return(nil).Once()
	m.On("SignalWorkflow", mock.Anything, "t1", "", contract.SignalClose, nil).Return(nil).Once()
	m.On("SignalWorkflow", mock.Anything, "t1", "", contract.SignalCancelTurn, nil).Return(nil).Once()
	c := New(m, "")
	for _, err := range []error{c.Signal(ctx, "t1", in), c.Close(ctx, "t1"), c.CancelTurn(ctx, "t1")} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestStatusAndMessages(t *testing.T) {
	m := mocks.NewClient(t)
	m.On("QueryWorkflow", mock.Anything, "t1", "", contract.QueryStatus).
		Return(jsonValue(t, contract.Status{State: contract.StateWaiting, Turns: 2, Messages: 3}), nil)
	msg := func(typ, text string) contract.Message {
		return contract.Message{Type: typ, TaskIO: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(text)}}}
	}
	all := []contract.Message{msg(contract.TypeInput, "a"), msg(contract.TypeOutput, "b"), msg(contract.TypeInput, "c")}
	all[0].CommittedAt, all[1].CommittedAt = "2026-11-29T10:00:00.000000Z", "2026-11-29T10:00:01.000000Z" // "c" is queued
	m.On("QueryWorkflow", mock.Anything, "t1", "", contract.QueryMessages).Return(jsonValue(t, all), nil).Once()
	m.On("QueryWorkflow", mock.Anything, "t1", "", contract.QueryMessages, contract.MessagesPage{After: 0}).Return(jsonValue(t, all[:2]), nil).Once()
	m.On("QueryWorkflow", mock.Anything, "t1", "", contract.QueryMessages, contract.MessagesPage{After: 2}).Return(jsonValue(t, all[2:]), nil).Once()
	m.On("QueryWorkflow", mock.Anything, "t1", "", contract.QueryMessages, contract.MessagesPage{After: 3}).Return(jsonValue(t, []contract.Message{}), nil).Once()

	c := New(m, "")
	st, err := c.Status(ctx, "t1")
	if err != nil || st.State != contract.StateWaiting || st.Turns != 2 {
		t.Fatalf("status %+v, %v", st, err)
	}
	whole, err := c.Messages(ctx, "t1", nil)
	if err != nil || len(whole) != 3 {
		t.Fatalf("messages %v, %v", whole, err)
	}
	paged, err := c.AllMessages(ctx, "t1")
	if err != nil || len(paged) != 3 {
		t.Fatalf("all messages %v, %v", paged, err)
	}
	for i := range paged {
		if paged[i].Type != all[i].Type || *paged[i].Message[0].Text != *all[i].Message[0].Text {
			t.Errorf("entry %d: %+v, want %+v", i, paged[i], all[i])
		}
	}
}

func TestAllMessagesStopsOnAnEmptyPage(t *testing.T) {
	m := mocks.NewClient(t)
	m.On("QueryWorkflow", mock.Anything, "t1", "", contract.QueryMessages, contract.MessagesPage{After: 0}).
		Return(jsonValue(t, []contract.Message{}), nil).Once()
	got, err := New(m, "").AllMessages(ctx, "t1")
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestQueryFailedCarriesTheType(t *testing.T) {
	m := mocks.NewClient(t)
	m.On("QueryWorkflow", mock.Anything, "t1", "", contract.QueryMessages).
		Return(nil, serviceerror.NewQueryFailed("INVALID_INPUT: the list is over 2 MiB; page it"))
	_, err := New(m, "").Messages(ctx, "t1", nil)
	if se := wantType(t, err, contract.ErrInvalidInput); se.Message != "the list is over 2 MiB; page it" {
		t.Errorf("message %q", se.Message)
	}
}

func TestResult(t *testing.T) {
	ok := contract.Result{State: contract.StateCompleted, Turns: 1, EndedBy: contract.EndedBySingle, Messages: 2}
	cases := map[string]struct {
		get     func(context.Context, any) error
		typ     string
		message string
	}{
		"completed": {get: func(_ context.Context, ptr any) error { *ptr.(*contract.Result) = ok; return nil }},
		"failed": {
			get: func(context.Context, any) error {
				return fmt.Errorf("workflow execution error: %w", temporal.NewNonRetryableApplicationError("the model refused", contract.ErrModel, nil))
			},
			typ: contract.ErrModel, message: "the model refused",
		},
		"canceled":   {get: func(context.Context, any) error { return temporal.NewCanceledError() }, typ: ErrTaskCanceled, message: `task "t1" was canceled`},
		"terminated": {get: func(context.Context, any) error { return &temporal.TerminatedError{} }, typ: ErrTaskTerminated, message: `task "t1" was terminated`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := mocks.NewClient(t)
			run := mocks.NewWorkflowRun(t)
			run.On("Get", mock.Anything, mock.Anything).Return(tc.get)
			m.On("GetWorkflow", mock.Anything, "t1", "").Return(run)
			res, err := New(m, "").Result(ctx, "t1")
			if tc.typ == "" {
				if err != nil || !reflect.DeepEqual(res, ok) {
					t.Fatalf("got %+v, %v", res, err)
				}
				return
			}
			if se := wantType(t, err, tc.typ); se.Message != tc.message {
				t.Errorf("message %q, want %q", se.Message, tc.message)
			}
		})
	}
}

func TestOtherErrorsStayWrapped(t *testing.T) {
	m := mocks.NewClient(t)
	m.On("SignalWorkflow", mock.Anything, "t1", "", contract.SignalClose, nil).Return(context.DeadlineExceeded)
	err := New(m, "").Close(ctx, "t1")
	if !errors.Is(err, context.DeadlineExceeded) || contract.TypeOf(err) != "" || !strings.Contains(err.Error(), `"t1"`) {
		t.Fatalf("got %v", err)
	}
}

// sendHandle answers the send update with receivedAt.
func sendHandle(t *testing.T, receivedAt string) *mocks.WorkflowUpdateHandle {
	h := mocks.NewWorkflowUpdateHandle(t)
	h.On("Get", mock.Anything, mock.Anything).Return(func(_ context.Context, ptr any) error {
		*ptr.(*contract.SendResult) = contract.SendResult{ReceivedAt: receivedAt}
		return nil
	})
	return h
}

func TestSendWithIDIsTheUpdateID(t *testing.T) {
	in := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("more")}}
	m := mocks.NewClient(t)
	var got []client.UpdateWorkflowOptions
	m.On("UpdateWorkflow", mock.Anything, mock.Anything).
		Run(func(a mock.Arguments) { got = append(got, a.Get(1).(client.UpdateWorkflowOptions)) }).
		Return(sendHandle(t, "2026-01-02T03:04:05.000000Z"), nil)

	c := New(m, "")
	id := strings.Repeat("k", contract.MaxInputIDBytes) // exactly the bound fits
	// A retry sends the same update ID.
	for range 2 {
		res, err := c.SendWithID(ctx, "t1", id, in)
		if err != nil || res.ReceivedAt != "2026-01-02T03:04:05.000000Z" {
			t.Fatalf("got %+v, %v", res, err)
		}
	}
	if _, err := c.SendWithID(ctx, "t1", "", in); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, "t1", in); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d updates, want 4", len(got))
	}
	for i, o := range got {
		want := id
		if i >= 2 {
			want = "" // no ID: the SDK generates one
		}
		if o.UpdateID != want || o.WorkflowID != "t1" || o.UpdateName != contract.UpdateSend ||
			o.WaitForStage != client.WorkflowUpdateStageCompleted || len(o.Args) != 1 {
			t.Fatalf("update %d: options %+v, want update ID %q", i, o, want)
		}
		sent, ok := o.Args[0].(contract.TaskIO)
		if !ok || *sent.Message[0].Text != "more" || sent.Values != nil {
			t.Fatalf("update %d: argument %#v, want the input as is", i, o.Args[0])
		}
	}
}

func TestSendWithIDTakesAnEqualInputIDKey(t *testing.T) {
	in := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("x")}, Values: map[string]json.RawMessage{contract.KeyInputID: json.RawMessage(`"req-1"`)}}
	m := mocks.NewClient(t)
	var got client.UpdateWorkflowOptions
	m.On("UpdateWorkflow", mock.Anything, mock.Anything).
		Run(func(a mock.Arguments) { got = a.Get(1).(client.UpdateWorkflowOptions) }).
		Return(sendHandle(t, "2026-01-02T03:04:05.000000Z"), nil).Once()
	if _, err := New(m, "").SendWithID(ctx, "t1", "req-1", in); err != nil {
		t.Fatal(err)
	}
	if got.UpdateID != "req-1" {
		t.Errorf("update ID %q", got.UpdateID)
	}
}

func TestSignalWithIDCarriesInputID(t *testing.T) {
	vals := map[string]json.RawMessage{"city": json.RawMessage(`"Paris"`)}
	in := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("x")}, Values: vals}
	m := mocks.NewClient(t)
	var sent []contract.TaskIO
	m.On("SignalWorkflow", mock.Anything, "t1", "", contract.SignalInput, mock.Anything).
		Run(func(a mock.Arguments) { sent = append(sent, a.Get(4).(contract.TaskIO)) }).Return(nil)

	c := New(m, "")
	if err := c.SignalWithID(ctx, "t1", `req-"7"`, in); err != nil {
		t.Fatal(err)
	}
	if err := c.SignalWithID(ctx, "t1", "", in); err != nil {
		t.Fatal(err)
	}
	if err := c.SignalWithID(ctx, "t1", "plain", contract.TaskIO{Message: in.Message}); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 3 {
		t.Fatalf("%d signals, want 3", len(sent))
	}
	var id string
	if err := json.Unmarshal(sent[0].Values[contract.KeyInputID], &id); err != nil || id != `req-"7"` {
		t.Errorf("input_id %s (%v), want the ID as a JSON string", sent[0].Values[contract.KeyInputID], err)
	}
	if string(sent[0].Values["city"]) != `"Paris"` || *sent[0].Message[0].Text != "x" {
		t.Errorf("signaled %+v: the rest of the input must stay", sent[0])
	}
	if len(vals) != 1 || vals[contract.KeyInputID] != nil {
		t.Errorf("the caller's Values changed: %v", vals)
	}
	if _, ok := sent[1].Values[contract.KeyInputID]; ok || len(sent[1].Values) != 1 {
		t.Errorf("no ID: signaled %+v, want the input as is", sent[1])
	}
	if string(sent[2].Values[contract.KeyInputID]) != `"plain"` || len(sent[2].Values) != 1 {
		t.Errorf("an input without values: signaled %+v", sent[2])
	}
	// What is signaled encodes as the flat TaskIO the workflow reads.
	b, err := json.Marshal(sent[0])
	if err != nil || !strings.Contains(string(b), `"input_id":"req-\"7\""`) {
		t.Errorf("encoded %s, %v", b, err)
	}
}

func TestInputIDRefusedBeforeTheServer(t *testing.T) {
	plain := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("x")}}
	other := contract.TaskIO{Message: plain.Message, Values: map[string]json.RawMessage{contract.KeyInputID: json.RawMessage(`"other"`)}}
	notString := contract.TaskIO{Message: plain.Message, Values: map[string]json.RawMessage{contract.KeyInputID: json.RawMessage(`7`)}}
	cases := map[string]struct {
		id   string
		in   contract.TaskIO
		want string
	}{
		"too long":        {id: strings.Repeat("k", contract.MaxInputIDBytes+1), in: plain, want: "129 bytes is more than the 128 allowed"},
		"not UTF-8":       {id: "req-\xff", in: plain, want: "not valid UTF-8"},
		"blank":           {id: " \t", in: plain, want: "must not be empty"},
		"other input_id":  {id: "req-1", in: other, want: `carries input_id "other" but the input ID is "req-1"`},
		"input_id number": {id: "req-1", in: notString, want: "carries input_id 7"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := mocks.NewClient(t) // any call to the server fails the test
			c := New(m, "")
			res, err := c.SendWithID(ctx, "t1", tc.id, tc.in)
			if se := wantType(t, err, contract.ErrInvalidInput); !strings.Contains(se.Message, tc.want) || res != (contract.SendResult{}) {
				t.Errorf("send: %q, %+v; want a message holding %q", se.Message, res, tc.want)
			}
			if se := wantType(t, c.SignalWithID(ctx, "t1", tc.id, tc.in), contract.ErrInvalidInput); !strings.Contains(se.Message, tc.want) {
				t.Errorf("signal: %q; want a message holding %q", se.Message, tc.want)
			}
			m.AssertNotCalled(t, "UpdateWorkflow", mock.Anything, mock.Anything)
			m.AssertNotCalled(t, "SignalWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything)
		})
	}
	if err := CheckInputID("0b3c9e4e-2f7a-4c55-9d4e-6b1e7f0a9a21"); err != nil {
		t.Errorf("a UUID: %v", err)
	}
}
