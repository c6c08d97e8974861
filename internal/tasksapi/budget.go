package tasksapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/starter"
)

// Budgets of runs (docs/budgets.md#the-tasks-api), an addition to the Tasks
// API: a task's budget (Task.Budget) is every run's StartArgs budget unless
// the run request gives its own; GET /v1/runs/{id} shows it (status.budget)
// and the state awaiting_budget while the run's next model call waits for a
// raise; POST /v1/runs/{id}/budget raises it with the raise-budget update,
// through the Go client. It needs the call permission, as deciding an
// approval and sending an input do: whoever may drive a run may let it spend
// more. The raise's `by` is the caller's key ID, never taken from the body.

// RaiseBudgetRequest is the body of POST /v1/runs/{id}/budget: amounts
// added to the run's budget limits.
type RaiseBudgetRequest struct {
	Units        *int64 `json:"units,omitempty" minimum:"1" maximum:"1125899906842624" doc:"Units to add; the run's budget must limit units"`
	InputTokens  *int64 `json:"inputTokens,omitempty" minimum:"1" maximum:"1125899906842624" doc:"Input tokens to add; the run's budget must limit inputTokens"`
	OutputTokens *int64 `json:"outputTokens,omitempty" minimum:"1" maximum:"1125899906842624" doc:"Output tokens to add; the run's budget must limit outputTokens"`
}

type budgetOut struct {
	Body struct {
		Data contract.BudgetStatus `json:"data"`
	}
}

func (s *server) registerBudget() {
	raise := op("raiseRunBudget", http.MethodPost, "/v1/runs/{id}/budget", PermCall,
		"Raise a run's budget (the raise-budget update): the amounts are added to its limits, and a run in awaiting_budget goes on once what is left covers its next call; by is the caller's key ID",
		http.StatusOK, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
	huma.Register(s.api, raise, func(ctx context.Context, in *struct {
		ID   string `path:"id" pattern:"^run-[a-z2-7]{26}$" doc:"The run's ID (X-Request-Id of its answer)"`
		Body RaiseBudgetRequest
	}) (*budgetOut, error) {
		r := contract.RaiseBudgetArgs{Amounts: contract.Amounts{Units: in.Body.Units, InputTokens: in.Body.InputTokens, OutputTokens: in.Body.OutputTokens}, By: caller(ctx)}
		if err := starter.CheckRaiseBudget(r); err != nil {
			return nil, raiseProblem(in.ID, err)
		}
		if _, err := s.ownRun(ctx, in.ID); err != nil {
			return nil, err
		}
		st, err := s.starter().RaiseBudget(ctx, in.ID, r)
		if err != nil {
			return nil, raiseProblem(in.ID, err)
		}
		out := &budgetOut{}
		out.Body.Data = st
		return out, nil
	})
	describeBudgetSchemas(s.api.OpenAPI().Components.Schemas.Map())
}

// describeBudgetSchemas documents the contract's budget types (which carry
// no doc tags) in the OpenAPI description.
func describeBudgetSchemas(m map[string]*huma.Schema) {
	describe := func(schema string, props map[string]string) {
		if sc := m[schema]; sc != nil {
			for name, doc := range props {
				if p := sc.Properties[name]; p != nil {
					p.Description = doc
				}
			}
		}
	}
	describe("Budget", map[string]string{
		"units":        "The most the run may spend in the catalogue's units (GET /v1/models); absent: no limit on units",
		"inputTokens":  "The most input tokens; absent: no limit",
		"outputTokens": "The most output tokens; absent: no limit",
		"onExhausted":  "wait (the default): a call whose worst case does not fit waits in awaiting_budget for POST /v1/runs/{id}/budget; fail: the run fails with BUDGET_EXCEEDED",
	})
	if sc := m["Budget"]; sc != nil {
		if p := sc.Properties["onExhausted"]; p != nil {
			p.Enum = []any{contract.OnExhaustedWait, contract.OnExhaustedFail}
		}
	}
	describe("BudgetStatus", map[string]string{
		"limit":    "The budget as started, plus every raise",
		"used":     "What the run's model calls and its ended sub-tasks used",
		"reserved": "Held for the sub-tasks running now (each its share)",
		"left":     "limit - used - reserved in each limited dimension, never below 0",
		"needed":   "While the run is awaiting_budget: the worst case of the call that waits; raise so left covers it",
		"raises":   "The raises taken",
	})
}

// raiseProblem maps a refused raise: the task's INVALID_INPUT (no budget,
// a dimension it does not limit, over the bound) names the field of the
// body ("raise-budget.units: ..." is field units).
func raiseProblem(id string, err error) error {
	if contract.TypeOf(err) == contract.ErrInvalidInput {
		msg := contract.MessageOf(err)
		if path, detail, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(path, "raise-budget.") {
			field := strings.TrimPrefix(path, "raise-budget.")
			return invalid(field, fmt.Sprintf("%s: %s", field, detail))
		}
		return invalid("", strings.TrimPrefix(msg, "raise-budget: "))
	}
	return approvalProblem(id, err)
}
