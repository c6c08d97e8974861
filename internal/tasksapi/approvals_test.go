package tasksapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/definitions"
)

const (
	apiRun   = "run-aaaaaaaaaaaaaaaaaaaaaaaaaa" // started by this API
	otherRun = "run-bbbbbbbbbbbbbbbbbbbbbbbbbb" // a task started otherwise
	goneRun  = "run-cccccccccccccccccccccccccc" // no such workflow
	doneRun  = "run-dddddddddddddddddddddddddd" // an API run that has ended

	callKey = "call-key"
	viewKey = "view-key"
)

// approvalsClient fakes the Temporal client for the approval routes: runs
// by ID, the approvals query and the decide update, whose validator it
// plays with decided.
type approvalsClient struct {
	client.Client
	mu        sync.Mutex
	approvals []contract.Approval
	updates   []client.UpdateWorkflowOptions
	refuse    error // the next decide fails with it
}

func (c *approvalsClient) DescribeWorkflowExecution(_ context.Context, id, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	memo := map[string]*commonpb.Payload{}
	switch id {
	case apiRun, doneRun:
		p, err := converter.GetDefaultDataConverter().ToPayload("support")
		if err != nil {
			return nil, err
		}
		memo[memoTask] = p
	case otherRun:
	default:
		return nil, serviceerror.NewNotFound("workflow not found for ID: " + id)
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{
		WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Memo: &commonpb.Memo{Fields: memo}}}, nil
}

func (c *approvalsClient) QueryWorkflow(_ context.Context, id, _, name string, _ ...any) (converter.EncodedValue, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if name != contract.QueryApprovals {
		return nil, serviceerror.NewQueryFailed("unknown query " + name)
	}
	p, err := converter.GetDefaultDataConverter().ToPayloads(c.approvals)
	if err != nil {
		return nil, err
	}
	return client.NewValue(p), nil
}

func (c *approvalsClient) UpdateWorkflow(_ context.Context, o client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = append(c.updates, o)
	if o.WorkflowID == doneRun {
		return nil, serviceerror.NewNotFound("workflow execution already completed")
	}
	if o.UpdateName != contract.UpdateDecide {
		return nil, serviceerror.NewInvalidArgument("unknown update " + o.UpdateName)
	}
	if err := c.refuse; err != nil {
		c.refuse = nil
		return &decideHandle{err: err}, nil
	}
	d := o.Args[0].(contract.DecideArgs)
	for i := range c.approvals {
		a := &c.approvals[i]
		if a.ID != d.ID {
			continue
		}
		if a.Decision != nil {
			return &decideHandle{err: temporal.NewNonRetryableApplicationError("approval "+d.ID+" was decided before; the first decision stands", contract.ErrApprovalDecided, nil)}, nil
		}
		a.Decision = &contract.Decision{Approve: *d.Approve, Reason: d.Reason, By: d.By, DecidedAt: "2026-12-01T10:05:00.000000Z"}
		return &decideHandle{res: *a}, nil
	}
	// What the SDK makes of a *schema.Error returned by the validator.
	return &decideHandle{err: temporal.NewApplicationError("APPROVAL_NOT_FOUND: the task has no approval "+d.ID, "Error")}, nil
}

type decideHandle struct {
	res contract.Approval
	err error
}

func (h *decideHandle) WorkflowID() string { return "" }
func (h *decideHandle) RunID() string      { return "" }
func (h *decideHandle) UpdateID() string   { return "" }
func (h *decideHandle) Get(_ context.Context, ptr any) error {
	if h.err != nil {
		return h.err
	}
	*ptr.(*contract.Approval) = h.res
	return nil
}

func approvalsAPI(t *testing.T) (*approvalsClient, http.Handler) {
	c := &approvalsClient{approvals: []contract.Approval{
		{ID: "t1.c1", Capability: "refund", Arguments: json.RawMessage(`{"order":"A-1","amount":120}`), Turn: 1, RequestedAt: "2026-12-01T10:00:00.000000Z"},
		{ID: "t1.c2", Capability: "refund", Arguments: json.RawMessage(`{"order":"A-2","amount":900}`), Turn: 1, RequestedAt: "2026-12-01T10:00:00.000000Z"},
	}}
	keys, err := ParseKeys(callKey+"=call+view,"+viewKey+"=view", "")
	require.NoError(t, err)
	h, _ := New(Config{Store: &definitions.Store{C: c}, Keys: keys})
	return c, h
}

type answer struct {
	status int
	body   map[string]any
	ctype  string
}

func request(t *testing.T, h http.Handler, key, method, path, body string) answer {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	a := answer{status: w.Code, ctype: w.Header().Get("Content-Type")}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &a.body), "%s %s: %s", method, path, w.Body.String())
	return a
}

func (a answer) problem(t *testing.T, status int, code string) string {
	t.Helper()
	require.Equal(t, status, a.status, "%v", a.body)
	require.Equal(t, "application/problem+json", a.ctype)
	require.Equal(t, code, a.body["code"], "%v", a.body)
	return a.body["detail"].(string)
}

func TestListApprovals(t *testing.T) {
	c, h := approvalsAPI(t)
	a := request(t, h, viewKey, http.MethodGet, "/v1/runs/"+apiRun+"/approvals", "")
	require.Equal(t, http.StatusOK, a.status, "%v", a.body)
	list := a.body["data"].([]any)
	require.Len(t, list, 2)
	first := list[0].(map[string]any)
	require.Equal(t, "t1.c1", first["id"])
	require.Equal(t, map[string]any{"order": "A-1", "amount": 120.0}, first["arguments"])
	require.Contains(t, first, "decision")
	require.Nil(t, first["decision"])

	// None: an empty list, not null.
	c.approvals = nil
	a = request(t, h, viewKey, http.MethodGet, "/v1/runs/"+apiRun+"/approvals", "")
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, []any{}, a.body["data"])
}

func TestDecideApproval(t *testing.T) {
	c, h := approvalsAPI(t)
	a := request(t, h, callKey, http.MethodPost, "/v1/runs/"+apiRun+"/approvals/t1.c2", `{"approve": false, "reason": "over the limit"}`)
	require.Equal(t, http.StatusOK, a.status, "%v", a.body)
	got := a.body["data"].(map[string]any)
	require.Equal(t, "t1.c2", got["id"])
	require.Equal(t, map[string]any{"approve": false, "reason": "over the limit", "by": KeyID(callKey), "decided_at": "2026-12-01T10:05:00.000000Z"}, got["decision"])

	require.Len(t, c.updates, 1)
	u := c.updates[0]
	d := u.Args[0].(contract.DecideArgs)
	require.Equal(t, apiRun, u.WorkflowID)
	require.Equal(t, contract.UpdateDecide, u.UpdateName)
	require.Equal(t, client.WorkflowUpdateStageCompleted, u.WaitForStage)
	require.True(t, strings.HasPrefix(u.UpdateID, "decide:t1.c2:"), u.UpdateID)
	require.Equal(t, "t1.c2", d.ID)
	require.False(t, *d.Approve)
	require.Equal(t, KeyID(callKey), d.By, "by is the key's ID")

	// Decided: 409, and the approval keeps the first decision.
	a = request(t, h, callKey, http.MethodPost, "/v1/runs/"+apiRun+"/approvals/t1.c2", `{"approve": true}`)
	require.Contains(t, a.problem(t, http.StatusConflict, CodeApprovalDecided), "the first decision stands")
	require.False(t, c.approvals[1].Decision.Approve)

	// The same decision again (a retry once Temporal no longer knows the
	// update): the approval, as decided.
	a = request(t, h, callKey, http.MethodPost, "/v1/runs/"+apiRun+"/approvals/t1.c2", `{"approve": false, "reason": "over the limit"}`)
	require.Equal(t, http.StatusOK, a.status, "%v", a.body)

	// Unknown: 404 approval_not_found.
	a = request(t, h, callKey, http.MethodPost, "/v1/runs/"+apiRun+"/approvals/t7.c1", `{"approve": true}`)
	require.Equal(t, "the task has no approval t7.c1", a.problem(t, http.StatusNotFound, CodeApprovalNotFound))
}

func TestDecideApprovalRefusals(t *testing.T) {
	c, h := approvalsAPI(t)
	path := "/v1/runs/" + apiRun + "/approvals/t1.c1"
	cases := []struct {
		name, key, path, body string
		status                int
		code, field           string
	}{
		{"no approve", callKey, path, `{"reason": "x"}`, http.StatusBadRequest, CodeValidationFailed, ""}, // huma names it in the detail
		{"approve not a boolean", callKey, path, `{"approve": "yes"}`, http.StatusBadRequest, CodeValidationFailed, "approve"},
		{"by is the key's", callKey, path, `{"approve": true, "by": "someone"}`, http.StatusBadRequest, CodeValidationFailed, "by"},
		{"long reason", callKey, path, `{"approve": false, "reason": "` + strings.Repeat("é", 1001) + `"}`, http.StatusBadRequest, CodeValidationFailed, "reason"},
		{"view key", viewKey, path, `{"approve": true}`, http.StatusForbidden, CodeForbidden, ""},
		{"no run", callKey, "/v1/runs/" + goneRun + "/approvals/t1.c1", `{"approve": true}`, http.StatusNotFound, CodeRunNotFound, ""},
		{"not an API run", callKey, "/v1/runs/" + otherRun + "/approvals/t1.c1", `{"approve": true}`, http.StatusNotFound, CodeRunNotFound, ""},
		{"ended run", callKey, "/v1/runs/" + doneRun + "/approvals/t1.c1", `{"approve": true}`, http.StatusConflict, CodeRunClosed, ""},
		{"bad run ID", callKey, "/v1/runs/task-1/approvals/t1.c1", `{"approve": true}`, http.StatusBadRequest, CodeValidationFailed, "id"},
		{"long approval ID", callKey, "/v1/runs/" + apiRun + "/approvals/" + strings.Repeat("t", 129), `{"approve": true}`, http.StatusBadRequest, CodeValidationFailed, "approval"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := request(t, h, tc.key, http.MethodPost, tc.path, tc.body)
			detail := a.problem(t, tc.status, tc.code)
			if tc.name == "no approve" {
				require.Contains(t, detail, "approve")
			}
			if tc.field != "" {
				require.Equal(t, tc.field, a.body["field"], "%v", a.body)
			}
		})
	}
	for _, u := range c.updates {
		require.Equal(t, doneRun, u.WorkflowID, "only the ended run's update reached Temporal")
	}
	require.Nil(t, c.approvals[0].Decision)

	// The task's own refusal of the input: 400.
	c.refuse = temporal.NewNonRetryableApplicationError("by: 300 bytes is more than the 256 allowed", "INVALID_INPUT", nil)
	a := request(t, h, callKey, http.MethodPost, path, `{"approve": true}`)
	require.Equal(t, "by: 300 bytes is more than the 256 allowed", a.problem(t, http.StatusBadRequest, CodeValidationFailed))
}

func TestListApprovalsRefusals(t *testing.T) {
	_, h := approvalsAPI(t)
	request(t, h, viewKey, http.MethodGet, "/v1/runs/"+goneRun+"/approvals", "").problem(t, http.StatusNotFound, CodeRunNotFound)
	request(t, h, viewKey, http.MethodGet, "/v1/runs/"+otherRun+"/approvals", "").problem(t, http.StatusNotFound, CodeRunNotFound)
	request(t, h, "nokey", http.MethodGet, "/v1/runs/"+apiRun+"/approvals", "").problem(t, http.StatusUnauthorized, CodeUnauthorized)
}
