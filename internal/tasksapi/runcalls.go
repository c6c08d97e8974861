package tasksapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/workflows"
)

// The calls on a run this API started: its status, its conversation, a
// follow-up input, cancelling it (and its approvals, approvals.go).

type runIDIn struct {
	ID string `path:"id" pattern:"^run-[a-z2-7]{26}$" doc:"The run's ID (X-Request-Id of its answer)"`
}

type statusOut struct {
	Body struct {
		Data contract.Status `json:"data"`
	}
}

type messagesOut struct {
	Body struct {
		Data []contract.Message `json:"data"`
	}
}

type messagesIn struct {
	ID    string `path:"id" pattern:"^run-[a-z2-7]{26}$"`
	After int    `query:"after" minimum:"0" doc:"Entries after this many"`
	Limit int    `query:"limit" minimum:"0" maximum:"1000" doc:"At most this many; 0: as many as fit a page"`
}

type sendIn struct {
	ID             string `path:"id" pattern:"^run-[a-z2-7]{26}$"`
	IdempotencyKey string `header:"Idempotency-Key" maxLength:"255" doc:"A repeated request with the same key returns the first input's receipt and sends nothing new, also across API restarts"`
	Body           contract.TaskIO
}

type receiptOut struct {
	Body struct {
		Data contract.SendResult `json:"data"`
	}
}

type canceledOut struct {
	Body struct {
		Data struct {
			Canceled bool `json:"canceled"`
		} `json:"data"`
	}
}

func (s *server) registerRunCalls() {
	huma.Register(s.api, op("getRun", http.MethodGet, "/v1/runs/{id}", PermView, "A run's status (the status query)", http.StatusOK, http.StatusNotFound),
		s.getRun)
	huma.Register(s.api, op("getRunMessages", http.MethodGet, "/v1/runs/{id}/messages", PermView, "A run's conversation (seed 000's messages)", http.StatusOK, http.StatusNotFound, http.StatusServiceUnavailable),
		s.getRunMessages)
	send := op("sendRunInput", http.MethodPost, "/v1/runs/{id}/inputs", PermCall, "Send a follow-up input (a TaskIO) to a run", http.StatusOK,
		http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
	send.SkipValidateBody = true // the run checks the input, as it checks any input
	huma.Register(s.api, send, s.sendRunInput)
	huma.Register(s.api, op("cancelRun", http.MethodPost, "/v1/runs/{id}/cancel", PermCall, "Cancel a run", http.StatusOK, http.StatusNotFound, http.StatusConflict),
		s.cancelRun)
	s.registerApprovals() // approvals.go
	s.registerBudget()    // budget.go
}

func (s *server) getRun(ctx context.Context, in *runIDIn) (*statusOut, error) {
	if _, err := s.ownRun(ctx, in.ID); err != nil {
		return nil, err
	}
	out := &statusOut{}
	if err := s.query(ctx, in.ID, &out.Body.Data, contract.QueryStatus); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *server) getRunMessages(ctx context.Context, in *messagesIn) (*messagesOut, error) {
	if _, err := s.ownRun(ctx, in.ID); err != nil {
		// A run whose execution Temporal removed: from its transcript.
		if out, ok, rerr := s.retainedMessages(ctx, in); ok {
			return out, rerr
		}
		return nil, err
	}
	out := &messagesOut{}
	if err := s.queryMessages(ctx, in.ID, &out.Body.Data, contract.MessagesPage{After: in.After, Limit: in.Limit}); err != nil {
		return nil, err
	}
	if out.Body.Data == nil {
		out.Body.Data = []contract.Message{}
	}
	return out, nil
}

// sendRunInput sends a follow-up to a run of a task still stored and
// enabled, within the task's input size.
func (s *server) sendRunInput(ctx context.Context, in *sendIn) (*receiptOut, error) {
	task, err := s.ownRun(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	d, err := s.storedDefinition(ctx, task) // a deleted task's runs are refused
	if err != nil {
		return nil, err
	}
	if d.Enabled != nil && !*d.Enabled {
		return nil, problem(CodeTaskDisabled, fmt.Sprintf("task %q is disabled", task), "")
	}
	if n, max := textBytes(in.Body), derefInt(d.Input.MaxBytes); n > max {
		return nil, invalid("message", fmt.Sprintf("%d bytes of text, more than the task's input.maxBytes %d", n, max))
	}
	h, err := s.cfg.Store.C.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: in.ID, UpdateName: contract.UpdateSend,
		UpdateID: inputUpdateID(caller(ctx), in.ID, in.IdempotencyKey), Args: []any{in.Body}, WaitForStage: client.WorkflowUpdateStageCompleted})
	out := &receiptOut{}
	if err == nil {
		err = h.Get(ctx, &out.Body.Data)
	}
	if err != nil {
		return nil, closedOr(err)
	}
	return out, nil
}

func (s *server) cancelRun(ctx context.Context, in *runIDIn) (*canceledOut, error) {
	if _, err := s.ownRun(ctx, in.ID); err != nil {
		return nil, err
	}
	if err := s.cfg.Store.C.CancelWorkflow(ctx, in.ID, ""); err != nil {
		return nil, closedOr(err)
	}
	out := &canceledOut{}
	out.Body.Data.Canceled = true
	return out, nil
}

// ownRun finds a run this API started and returns its task's name.
func (s *server) ownRun(ctx context.Context, id string) (string, error) {
	d, err := s.cfg.Store.C.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return "", problem(CodeRunNotFound, fmt.Sprintf("no run %s", id), "")
	}
	if err != nil {
		return "", problem(CodeInternal, err.Error(), "")
	}
	task := s.memoString(d, memoTask)
	if task == "" {
		return "", problem(CodeRunNotFound, fmt.Sprintf("no run %s was started by this API", id), "")
	}
	return task, nil
}

// queryMessages asks the messages query, again while the run answers
// MESSAGES_LOADING (entries of earlier runs still being loaded from a slow
// store, outside the run's lock), so a slow store delays the answer; a
// store that stays too slow or down answers 503 unavailable.
func (s *server) queryMessages(ctx context.Context, id string, out any, page contract.MessagesPage) error {
	deadline := time.Now().Add(workflows.MessagesLoadingRetryFor)
	for {
		err := s.query(ctx, id, out, contract.QueryMessages, page)
		if !workflows.IsMessagesLoading(err) {
			return err
		}
		if time.Now().After(deadline) {
			return problem(CodeUnavailable, "the run's earlier messages are still being loaded from storage (slow or unavailable); retry in a moment", "", http.StatusServiceUnavailable)
		}
		select {
		case <-ctx.Done():
			return problem(CodeUnavailable, "the run's earlier messages are being loaded from storage; retry in a moment", "", http.StatusServiceUnavailable)
		case <-time.After(workflows.MessagesLoadingRetryPause):
		}
	}
}

func (s *server) query(ctx context.Context, id string, out any, name string, args ...any) error {
	v, err := s.cfg.Store.C.QueryWorkflow(ctx, id, "", name, args...)
	if err != nil {
		return problem(CodeInternal, "reading the run: "+err.Error(), "")
	}
	if err := v.Get(out); err != nil {
		return problem(CodeInternal, "reading the run: "+err.Error(), "")
	}
	return nil
}

// textBytes counts the text an input sends.
func textBytes(in contract.TaskIO) int {
	n := 0
	for _, p := range in.Message {
		if p.Text != nil {
			n += len(*p.Text)
		}
	}
	return n
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
