package tasksapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/starter"
)

// Approvals of a run (docs/tasks-api.md#approvals): the capability calls
// that wait for a person's decision, read with the `approvals` query and
// decided with the `decide` update, through the Go client (starter), so a
// decision has the same update ID, and a repeat the same answer, as one made
// with the CLI. The decision's `by` is the caller's key ID (KeyID), never
// taken from the body.

// maxReasonBytes bounds a decision's reason (workflows.DecideArgs: at most
// 2,000 bytes); checked here so the refusal names the field.
const maxReasonBytes = 2000

// DecideRequest is the body of POST /v1/runs/{id}/approvals/{approval}.
type DecideRequest struct {
	Approve bool    `json:"approve" doc:"true runs the capability call; false refuses it, and the model is told a person refused it, with the reason"`
	Reason  string  `json:"reason,omitempty" doc:"Why, at most 2,000 bytes; shown to the model when denied"`
	Result  *string `json:"result,omitempty" maxLength:"65536" doc:"A client capability's call (client: true) is approved with its result, what the front end's run of it returned (at most 65,536 bytes), which the model reads; a remote agent's question (question set) is answered with it, the reply sent to the remote agent; refused for any other call"`
}

type approvalsOut struct {
	Body struct {
		Data []contract.Approval `json:"data"`
	}
}

type approvalOut struct {
	Body struct {
		Data contract.Approval `json:"data"`
	}
}

func (s *server) registerApprovals() {
	huma.Register(s.api, op("getRunApprovals", http.MethodGet, "/v1/runs/{id}/approvals", PermView,
		"A run's approvals: capability calls waiting for a decision, and the last decided ones (the approvals query)", http.StatusOK,
		http.StatusNotFound, http.StatusServiceUnavailable),
		func(ctx context.Context, in *runIDIn) (*approvalsOut, error) {
			if _, err := s.ownRun(ctx, in.ID); err != nil {
				return nil, err
			}
			list, err := s.starter().Approvals(ctx, in.ID)
			if err != nil {
				return nil, approvalProblem(in.ID, err)
			}
			out := &approvalsOut{}
			out.Body.Data = list
			return out, nil
		})
	decide := op("decideRunApproval", http.MethodPost, "/v1/runs/{id}/approvals/{approval}", PermCall,
		"Approve or deny a pending approval of a run (the decide update); by is the caller's key ID", http.StatusOK,
		http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
	huma.Register(s.api, decide,
		func(ctx context.Context, in *struct {
			ID       string `path:"id" pattern:"^run-[a-z2-7]{26}$" doc:"The run's ID (X-Request-Id of its answer)"`
			Approval string `path:"approval" minLength:"1" maxLength:"128" doc:"The approval's ID, t<turn>.c<n> (GET /v1/runs/{id}/approvals lists them)"`
			Body     DecideRequest
		}) (*approvalOut, error) {
			if n := len(in.Body.Reason); n > maxReasonBytes {
				return nil, invalid("reason", fmt.Sprintf("%d bytes, more than the %d allowed", n, maxReasonBytes))
			}
			if _, err := s.ownRun(ctx, in.ID); err != nil {
				return nil, err
			}
			approve := in.Body.Approve
			if r := in.Body.Result; r != nil && len(*r) > contract.MaxClientResultBytes {
				return nil, invalid("result", fmt.Sprintf("%d bytes, more than the %d allowed", len(*r), contract.MaxClientResultBytes))
			}
			a, err := s.starter().Decide(ctx, in.ID, contract.DecideArgs{ID: in.Approval, Approve: &approve, Reason: in.Body.Reason, By: caller(ctx), Result: in.Body.Result})
			if err != nil {
				return nil, approvalProblem(in.ID, err)
			}
			out := &approvalOut{}
			out.Body.Data = a
			return out, nil
		})
	// A pending approval's decision is null; the arguments are any JSON.
	if a := s.api.OpenAPI().Components.Schemas.Map()["Approval"]; a != nil {
		if p := a.Properties["arguments"]; p != nil {
			p.Description = "The call's arguments, as the model sent them"
		}
		if p := a.Properties["id"]; p != nil {
			p.Description = "t<turn>.c<n>: the turn's n-th capability call"
		}
		if p := a.Properties["decision"]; p != nil && p.Ref != "" {
			a.Properties["decision"] = &huma.Schema{AnyOf: []*huma.Schema{{Ref: p.Ref}, {Type: "null"}},
				Description: "null while pending; how it was decided: by a person (by is the key ID over this API), or by the runtime (reason \"approval timed out\", \"task closed\" or \"turn canceled\")"}
		}
	}
}

// starter is the Go client over the API's Temporal connection.
func (s *server) starter() *starter.Client {
	return starter.New(s.cfg.Store.C, s.cfg.TaskQueue)
}

// approvalProblem maps the Go client's typed errors for run id.
func approvalProblem(id string, err error) error {
	msg := contract.MessageOf(err)
	switch contract.TypeOf(err) {
	case starter.ErrApprovalNotFound:
		return problem(CodeApprovalNotFound, msg, "")
	case starter.ErrApprovalDecided:
		return problem(CodeApprovalDecided, msg, "")
	case contract.ErrInvalidInput:
		return problem(CodeValidationFailed, msg, "")
	case contract.ErrTaskClosed:
		return problem(CodeRunClosed, "the run has ended: "+msg, "")
	case starter.ErrTaskNotFound:
		return problem(CodeRunNotFound, fmt.Sprintf("no run %s", id), "")
	case contract.ErrMessagesLoading:
		return problem(CodeUnavailable, "the run is reading its state back from storage (slow or unavailable); retry in a moment", "", http.StatusServiceUnavailable)
	}
	return problem(CodeInternal, "reading the run: "+err.Error(), "")
}
