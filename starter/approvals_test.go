package starter

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
)

func pending() contract.Approval {
	return contract.Approval{ID: "t3.c1", Capability: "refund", Arguments: json.RawMessage(`{"order":"A-1","amount":120}`),
		Turn: 3, RequestedAt: "2026-12-01T10:00:00.000000Z"}
}

func decided(approve bool, reason, by string) contract.Approval {
	a := pending()
	a.Decision = &contract.Decision{Approve: approve, Reason: reason, By: by, DecidedAt: "2026-12-01T10:05:00.000000Z"}
	return a
}

// decideHandle answers the decide update with a (or fails with err).
func decideHandle(t *testing.T, a contract.Approval, err error) *mocks.WorkflowUpdateHandle {
	h := mocks.NewWorkflowUpdateHandle(t)
	if err != nil {
		h.On("Get", mock.Anything, mock.Anything).Return(err)
		return h
	}
	h.On("Get", mock.Anything, mock.Anything).Return(func(_ context.Context, ptr any) error {
		*ptr.(*contract.Approval) = a
		return nil
	})
	return h
}

func TestApprovals(t *testing.T) {
	m := mocks.NewClient(t)
	list := []contract.Approval{decided(false, "too much", "ops"), pending()}
	m.On("QueryWorkflow", mock.Anything, "t1", "", contract.QueryApprovals).Return(jsonValue(t, list), nil).Once()
	m.On("QueryWorkflow", mock.Anything, "t2", "", contract.QueryApprovals).Return(jsonValue(t, nil), nil).Once()

	c := New(m, "")
	got, err := c.Approvals(ctx, "t1")
	if err != nil || len(got) != 2 {
		t.Fatalf("got %+v, %v", got, err)
	}
	if got[0].Decision == nil || got[0].Decision.Reason != "too much" || got[1].Decision != nil ||
		got[1].ID != "t3.c1" || string(got[1].Arguments) != `{"order":"A-1","amount":120}` || got[1].Turn != 3 {
		t.Errorf("approvals %+v", got)
	}
	none, err := c.Approvals(ctx, "t2")
	if err != nil || none == nil || len(none) != 0 {
		t.Fatalf("a task without approvals: %v, %v; want an empty list", none, err)
	}
}

func TestApprovalsRetriedWhileLoading(t *testing.T) {
	m := mocks.NewClient(t)
	m.On("QueryWorkflow", mock.Anything, "t1", "", contract.QueryApprovals).
		Return(nil, serviceerror.NewQueryFailed(contract.ErrMessagesLoading+": the task is reading its state back")).Once()
	m.On("QueryWorkflow", mock.Anything, "t1", "", contract.QueryApprovals).Return(jsonValue(t, []contract.Approval{pending()}), nil).Once()
	got, err := New(m, "").Approvals(ctx, "t1")
	if err != nil || len(got) != 1 {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestDecide(t *testing.T) {
	m := mocks.NewClient(t)
	var got []client.UpdateWorkflowOptions
	m.On("UpdateWorkflow", mock.Anything, mock.Anything).
		Run(func(a mock.Arguments) { got = append(got, a.Get(1).(client.UpdateWorkflowOptions)) }).
		Return(decideHandle(t, decided(true, "fine", "amina"), nil), nil)

	c := New(m, "")
	// A retry sends the same update ID.
	for range 2 {
		a, err := c.Approve(ctx, "t1", "t3.c1", "fine", "amina")
		if err != nil || a.Decision == nil || !a.Decision.Approve || a.Decision.By != "amina" {
			t.Fatalf("got %+v, %v", a, err)
		}
	}
	if _, err := c.Deny(ctx, "t1", "t3.c1", "fine", "amina"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Approve(ctx, "t1", "t3.c1", "other reason", "amina"); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d updates, want 4", len(got))
	}
	for i, o := range got {
		if o.WorkflowID != "t1" || o.RunID != "" || o.UpdateName != contract.UpdateDecide ||
			o.WaitForStage != client.WorkflowUpdateStageCompleted || len(o.Args) != 1 || !strings.HasPrefix(o.UpdateID, "decide:t3.c1:") {
			t.Fatalf("update %d: options %+v", i, o)
		}
		d, ok := o.Args[0].(contract.DecideArgs)
		if !ok || d.ID != "t3.c1" || d.Approve == nil || *d.Approve != (i != 2) || d.By != "amina" {
			t.Fatalf("update %d: argument %#v", i, o.Args[0])
		}
	}
	if got[0].UpdateID != got[1].UpdateID {
		t.Errorf("a repeated decision: update IDs %q and %q, want the same", got[0].UpdateID, got[1].UpdateID)
	}
	if got[2].UpdateID == got[0].UpdateID || got[3].UpdateID == got[0].UpdateID || got[2].UpdateID == got[3].UpdateID {
		t.Errorf("other decisions must have other update IDs: %q, %q, %q", got[0].UpdateID, got[2].UpdateID, got[3].UpdateID)
	}

	// What is sent encodes as the workflow's DecideArgs.
	p, err := converter.GetDefaultDataConverter().ToPayload(got[2].Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if s := string(p.GetData()); s != `{"id":"t3.c1","approve":false,"reason":"fine","by":"amina"}` {
		t.Errorf("encoded %s", s)
	}
}

func TestDecideRefusals(t *testing.T) {
	cases := map[string]struct {
		err     error
		typ     string
		message string
	}{
		// What the SDK makes of a *contract.Error returned by the validator,
		// and of a typed application error.
		"not found": {
			err: temporal.NewApplicationError("APPROVAL_NOT_FOUND: no approval t9.c1", "Error"),
			typ: ErrApprovalNotFound, message: "no approval t9.c1",
		},
		"typed not found": {
			err: temporal.NewNonRetryableApplicationError("no approval t9.c1", contract.ErrApprovalNotFound, nil),
			typ: ErrApprovalNotFound, message: "no approval t9.c1",
		},
		"invalid": {
			err: temporal.NewNonRetryableApplicationError("reason: 2001 bytes is more than the 2000 allowed", contract.ErrInvalidInput, nil),
			typ: contract.ErrInvalidInput, message: "reason: 2001 bytes is more than the 2000 allowed",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := mocks.NewClient(t)
			m.On("UpdateWorkflow", mock.Anything, mock.Anything).Return(decideHandle(t, contract.Approval{}, tc.err), nil)
			a, err := New(m, "").Approve(ctx, "t1", "t9.c1", "", "")
			if se := wantType(t, err, tc.typ); se.Message != tc.message || a.ID != "" {
				t.Errorf("message %q, approval %+v; want %q and no approval", se.Message, a, tc.message)
			}
		})
	}
}

// APPROVAL_DECIDED: someone else's decision stands and is an error; the
// same decision (a retry Temporal no longer recognises, after a
// continue-as-new) is answered with the approval.
func TestDecideDecided(t *testing.T) {
	refused := temporal.NewNonRetryableApplicationError("approval t3.c1 was decided at 2026-12-01T10:05:00.000000Z", contract.ErrApprovalDecided, nil)
	m := mocks.NewClient(t)
	m.On("UpdateWorkflow", mock.Anything, mock.Anything).Return(decideHandle(t, contract.Approval{}, refused), nil)
	m.On("QueryWorkflow", mock.Anything, "t1", "", contract.QueryApprovals).
		Return(jsonValue(t, []contract.Approval{decided(true, "fine", "amina")}), nil)

	c := New(m, "")
	a, err := c.Approve(ctx, "t1", "t3.c1", " fine\n", "amina")
	if err != nil || a.Decision == nil || !a.Decision.Approve || a.ID != "t3.c1" {
		t.Fatalf("the same decision again: %+v, %v; want the approval", a, err)
	}
	for name, decide := range map[string]func() (contract.Approval, error){
		"deny":         func() (contract.Approval, error) { return c.Deny(ctx, "t1", "t3.c1", "fine", "amina") },
		"someone else": func() (contract.Approval, error) { return c.Approve(ctx, "t1", "t3.c1", "fine", "omar") },
		"other reason": func() (contract.Approval, error) { return c.Approve(ctx, "t1", "t3.c1", "ok", "amina") },
	} {
		a, err := decide()
		if se := wantType(t, err, ErrApprovalDecided); !strings.Contains(se.Message, "was decided") || a.ID != "" {
			t.Errorf("%s: %+v, %v", name, a, err)
		}
	}
}

func TestDecideRefusedBeforeTheServer(t *testing.T) {
	yes := true
	cases := map[string]struct {
		d    contract.DecideArgs
		want string
	}{
		"no ID":        {d: contract.DecideArgs{Approve: &yes}, want: "approval ID: must not be empty"},
		"blank ID":     {d: contract.DecideArgs{ID: " ", Approve: &yes}, want: "approval ID: must not be empty"},
		"long ID":      {d: contract.DecideArgs{ID: strings.Repeat("t", MaxApprovalIDBytes+1), Approve: &yes}, want: "129 bytes"},
		"no approve":   {d: contract.DecideArgs{ID: "t1.c1"}, want: "approve is required"},
		"reason UTF-8": {d: contract.DecideArgs{ID: "t1.c1", Approve: &yes, Reason: "\xff"}, want: "reason: not valid UTF-8"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := mocks.NewClient(t) // any call to the server fails the test
			_, err := New(m, "").Decide(ctx, "t1", tc.d)
			if se := wantType(t, err, contract.ErrInvalidInput); !strings.Contains(se.Message, tc.want) {
				t.Errorf("message %q, want it to hold %q", se.Message, tc.want)
			}
		})
	}
}

func TestApprovalsOfUnknownAndEndedTasks(t *testing.T) {
	m := mocks.NewClient(t)
	m.On("QueryWorkflow", mock.Anything, "nope", "", contract.QueryApprovals).Return(nil, serviceerror.NewNotFound("workflow not found for ID: nope"))
	m.On("UpdateWorkflow", mock.Anything, mock.MatchedBy(func(o client.UpdateWorkflowOptions) bool { return o.WorkflowID == "nope" })).
		Return(nil, serviceerror.NewNotFound("workflow not found for ID: nope"))
	m.On("UpdateWorkflow", mock.Anything, mock.MatchedBy(func(o client.UpdateWorkflowOptions) bool { return o.WorkflowID == "done" })).
		Return(nil, serviceerror.NewNotFound("workflow execution already completed"))
	c := New(m, "")
	_, err := c.Approvals(ctx, "nope")
	wantType(t, err, ErrTaskNotFound)
	_, err = c.Approve(ctx, "nope", "t1.c1", "", "")
	wantType(t, err, ErrTaskNotFound)
	_, err = c.Deny(ctx, "done", "t1.c1", "", "")
	wantType(t, err, contract.ErrTaskClosed)
}
