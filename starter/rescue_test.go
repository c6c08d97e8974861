package starter

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/mock"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/mocks"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/workflows"
)

// oldTask mocks an ended task of several runs for rescue: runs maps a run
// ID to its start argument (nil: its history is gone) and the run it
// continued; the last of order is the latest run, the first the first.
type oldTask struct {
	id    string
	order []string
	runs  map[string]*workflows.StartArgs
	sent  *workflows.StartArgs // what Start sent, once it did
}

func (o *oldTask) mock(t *testing.T) *mocks.Client {
	m := mocks.NewClient(t)
	latest := o.order[len(o.order)-1]
	m.On("DescribeWorkflowExecution", mock.Anything, o.id, "").Return(&workflowservice.DescribeWorkflowExecutionResponse{
		WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
			Execution:  &commonpb.WorkflowExecution{WorkflowId: o.id, RunId: latest},
			Status:     enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
			FirstRunId: o.order[0],
		}}, nil).Maybe()
	for i, run := range o.order {
		prev := ""
		if i > 0 {
			prev = o.order[i-1]
		}
		it := mocks.NewHistoryEventIterator(t)
		it.On("HasNext").Return(true).Maybe()
		if args := o.runs[run]; args != nil {
			in, err := converter.GetDefaultDataConverter().ToPayloads(*args)
			if err != nil {
				t.Fatal(err)
			}
			it.On("Next").Return(&historypb.HistoryEvent{EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
				Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
					Input: in, ContinuedExecutionRunId: prev}}}, nil).Maybe()
		} else {
			it.On("Next").Return(nil, serviceerror.NewNotFound("workflow execution not found")).Maybe()
		}
		m.On("GetWorkflowHistory", mock.Anything, o.id, run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT).Return(it).Maybe()
	}
	m.On("QueryWorkflow", mock.Anything, o.id, "", contract.QueryCollected).Return(jsonValue(t, []contract.Collected{
		{Name: "note", Value: json.RawMessage(`"abc…"`), Ref: &noteRef}}), nil).Maybe()
	m.On("QueryWorkflow", mock.Anything, o.id, "", contract.QueryDescribe).Return(jsonValue(t, contract.Describe{
		TranscriptTaskID: o.id, TranscriptFirstRunID: o.order[0], Durable: 0}), nil).Maybe()
	m.On("QueryWorkflow", mock.Anything, o.id, "", contract.QueryMessages, contract.MessagesPage{After: 0}).
		Return(jsonValue(t, []contract.Message{}), nil).Maybe()
	m.On("ExecuteWorkflow", mock.Anything, mock.Anything, contract.WorkflowType, mock.Anything).
		Run(func(a mock.Arguments) {
			// What is sent must be what the workflow accepts.
			p, err := converter.GetDefaultDataConverter().ToPayload(a.Get(3))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := workflows.DecodeStart(converter.NewRawValue(p)); err != nil {
				t.Errorf("the workflow would refuse the argument: %v", err)
			}
			var args workflows.StartArgs
			if err := converter.GetDefaultDataConverter().FromPayload(p, &args); err != nil {
				t.Fatal(err)
			}
			o.sent = &args
		}).Return(mocks.NewWorkflowRun(t), nil).Maybe()
	return m
}

// noteRef is a collected value the old task kept by reference.
var noteRef = activities.ValueRef{Stash: "value-" + strings.Repeat("ab", 32), Bytes: 5_000, SHA256: strings.Repeat("ab", 32)}

func byReference() *workflows.StartArgs {
	return &workflows.StartArgs{CarryRef: &activities.StashRef{Name: "carry-2.1", Parts: 3, Bytes: 600_000, SHA256: "00"}}
}

// handed is a later run's inline argument: the agent, variables with the
// secret masked, the runtime's carry.
func handed(topic string) *workflows.StartArgs {
	return &workflows.StartArgs{StartArgs: contract.StartArgs{Agent: contract.AgentSpec{Name: "helper", Model: "openai/gpt-4o-mini", Instructions: "Key {{api_key}}, topic {{topic}}."},
		Mode: contract.ModeConversation, Secrets: []string{"api_key"}, ContinueAsNewEvents: 500,
		Variables: map[string]json.RawMessage{"api_key": json.RawMessage(`"[secret]"`), "topic": json.RawMessage(`"` + topic + `"`)}},
		Carry: &workflows.Carry{Run: 1}}
}

func firstRun() *workflows.StartArgs {
	a := handed("first")
	a.Carry = nil
	a.Variables["api_key"] = json.RawMessage(`"s3cr3t"`)
	in := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("Hello")}}
	a.Input = &in
	return a
}

func (o *oldTask) wantSent(t *testing.T, topic, secret string) {
	t.Helper()
	if o.sent == nil {
		t.Fatal("nothing started")
	}
	s := o.sent
	if s.CarryRef != nil || s.Carry != nil {
		t.Errorf("the new task's argument carries the old state: %+v %+v", s.CarryRef, s.Carry)
	}
	if s.Agent.Name != "helper" || s.Agent.Instructions != "Key {{api_key}}, topic {{topic}}." || s.Mode != contract.ModeConversation || s.ContinueAsNewEvents != 500 {
		t.Errorf("agent %+v, mode %q, continueAsNewEvents %d", s.Agent, s.Mode, s.ContinueAsNewEvents)
	}
	if got := string(s.Variables["topic"]); got != `"`+topic+`"` {
		t.Errorf("topic %s, want %q", got, topic)
	}
	if got := string(s.Variables["api_key"]); got != `"`+secret+`"` {
		t.Errorf("the secret is %s, want %q", got, secret)
	}
	if s.Continue == nil || s.Continue.TaskID != o.id || s.Continue.CollectedRefs["note"] != noteRef || string(s.Collected["note"]) != `"abc…"` {
		t.Errorf("continue %+v, collected %s", s.Continue, s.Collected)
	}
}

// The latest run started from a reference: the start-args query answers
// what its history does not hold (no earlier run but the first is read,
// for the secret's value).
func TestRescueOfARunStartedByReference(t *testing.T) {
	o := &oldTask{id: "old", order: []string{"r1", "r2", "r3"},
		runs: map[string]*workflows.StartArgs{"r1": firstRun(), "r2": nil, "r3": byReference()}}
	m := o.mock(t)
	fromQuery := handed("query")
	fromQuery.Carry = nil
	m.On("QueryWorkflow", mock.Anything, "old", "r3", workflows.QueryStartArgs).Return(jsonValue(t, fromQuery), nil).Once()
	id, err := New(m, "q").Rescue(ctx, "old", nil, StartOptions{TaskID: "new"})
	if err != nil || id != "new" {
		t.Fatalf("rescue: %q, %v", id, err)
	}
	o.wantSent(t, "query", "s3cr3t")
}

// A worker that does not know the start-args query: the newest earlier
// run whose argument is inline is read, through the chain of runs.
func TestRescueByReferenceWithoutTheStartQueryWalksBack(t *testing.T) {
	o := &oldTask{id: "old", order: []string{"r1", "r2", "r3", "r4"},
		runs: map[string]*workflows.StartArgs{"r1": firstRun(), "r2": handed("r2"), "r3": byReference(), "r4": byReference()}}
	m := o.mock(t)
	m.On("QueryWorkflow", mock.Anything, "old", "r4", workflows.QueryStartArgs).
		Return(nil, serviceerror.NewQueryFailed("unknown queryType start-args. KnownQueryTypes=[status messages]")).Once()
	if _, err := New(m, "q").Rescue(ctx, "old", nil, StartOptions{TaskID: "new"}); err != nil {
		t.Fatal(err)
	}
	o.wantSent(t, "r2", "s3cr3t")

	// Every earlier run by reference, the first gone: nothing to read.
	o = &oldTask{id: "old", order: []string{"r1", "r2", "r3"},
		runs: map[string]*workflows.StartArgs{"r1": nil, "r2": byReference(), "r3": byReference()}}
	m = o.mock(t)
	m.On("QueryWorkflow", mock.Anything, "old", "r3", workflows.QueryStartArgs).
		Return(nil, serviceerror.NewQueryFailed("unknown queryType start-args. KnownQueryTypes=[status]")).Once()
	_, err := New(m, "q").Rescue(ctx, "old", nil, StartOptions{TaskID: "new"})
	if err == nil || !strings.Contains(err.Error(), "upgrade the worker") || o.sent != nil {
		t.Fatalf("got %v (started %v), want a refusal naming the worker", err, o.sent != nil)
	}
}

// By reference, the first run's history gone: the secret must be given
// again, as for an inline run.
func TestRescueByReferenceAfterTheFirstRunIsGone(t *testing.T) {
	o := &oldTask{id: "old", order: []string{"r1", "r2"}, runs: map[string]*workflows.StartArgs{"r1": nil, "r2": byReference()}}
	m := o.mock(t)
	fromQuery := handed("query")
	fromQuery.Carry = nil
	m.On("QueryWorkflow", mock.Anything, "old", "r2", workflows.QueryStartArgs).Return(jsonValue(t, fromQuery), nil).Twice()
	c := New(m, "q")
	_, err := c.Rescue(ctx, "old", nil, StartOptions{TaskID: "new"})
	if se := wantType(t, err, contract.ErrInvalidInput); !strings.Contains(se.Message, "api_key") || o.sent != nil {
		t.Fatalf("%v (started %v): want a refusal naming the secret", se, o.sent != nil)
	}
	if _, err := c.Rescue(ctx, "old", nil, StartOptions{TaskID: "new", Variables: map[string]json.RawMessage{"api_key": json.RawMessage(`"given"`)}}); err != nil {
		t.Fatal(err)
	}
	o.wantSent(t, "query", "given")
}

// A start-args query that fails otherwise (the run was ended while it read
// its state back) is reported, and nothing starts.
func TestRescueByReferenceReportsAFailedStartQuery(t *testing.T) {
	o := &oldTask{id: "old", order: []string{"r1", "r2"}, runs: map[string]*workflows.StartArgs{"r1": firstRun(), "r2": byReference()}}
	m := o.mock(t)
	m.On("QueryWorkflow", mock.Anything, "old", "r2", workflows.QueryStartArgs).
		Return(nil, serviceerror.NewQueryFailed("the task is reading its state back after continuing as new (a moment); query again")).Once()
	_, err := New(m, "q").Rescue(ctx, "old", nil, StartOptions{})
	if err == nil || !strings.Contains(err.Error(), "reading its state back") || o.sent != nil {
		t.Fatalf("got %v (started %v)", err, o.sent != nil)
	}
}
