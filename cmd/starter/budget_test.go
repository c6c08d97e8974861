package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/workflows"
	"github.com/agenttask/agenttask/starter"
)

func TestStartBudgetFlags(t *testing.T) {
	m := mocks.NewClient(t)
	var opts client.StartWorkflowOptions
	var args workflows.StartArgs
	expectStart(t, m, &opts, &args)
	var out map[string]string
	runCLI(t, m, nil, "", "start", "--agent", agentJSON, "--budget-units", "5000", "--budget-output-tokens=800", "--on-exhausted", "fail").wantOK(t, &out)
	b := args.Budget
	if b == nil || b.Units == nil || *b.Units != 5000 || b.OutputTokens == nil || *b.OutputTokens != 800 || b.InputTokens != nil || b.OnExhausted != contract.OnExhaustedFail {
		t.Fatalf("budget %+v", b)
	}

	expectStart(t, m, &opts, &args)
	runCLI(t, m, nil, "", "start", "--agent", agentJSON, "--budget-input-tokens", "0").wantOK(t, &out)
	if b := args.Budget; b == nil || b.InputTokens == nil || *b.InputTokens != 0 || b.Units != nil || b.OnExhausted != "" {
		t.Fatalf("budget %+v", b)
	}

	expectStart(t, m, &opts, &args)
	runCLI(t, m, nil, "", "start", "--agent", agentJSON).wantOK(t, &out)
	if args.Budget != nil {
		t.Fatalf("budget %+v without a budget flag", args.Budget)
	}
}

func TestStartBudgetFlagsRefusedWithoutDialing(t *testing.T) {
	cases := []struct {
		args     []string
		code     int
		typ, msg string
	}{
		{[]string{"start", "--agent", agentJSON, "--on-exhausted", "fail"}, 2, ErrUsage, "--on-exhausted needs a budget"},
		{[]string{"start", "--agent", agentJSON, "--budget-units", "10", "--on-exhausted", "stop"}, 1, contract.ErrInvalidInput, `budget.onExhausted: "stop" must be "wait"`},
		{[]string{"start", "--agent", agentJSON, "--budget-units", "-1"}, 1, contract.ErrInvalidInput, "budget.units: -1 must be between 0"},
		{[]string{"start", "--agent", agentJSON, "--budget-units", "ten"}, 2, ErrUsage, "budget-units"},
		{[]string{"start", "--args", `{"agent": ` + agentJSON + `}`, "--budget-units", "10"}, 2, ErrUsage, `put the budget in it, such as "budget": {"units": 5000}`},
		{[]string{"start", "--args", `{"agent": ` + agentJSON + `, "budget": {}}`}, 1, contract.ErrInvalidInput, "budget: give at least one of units"},
		{[]string{"rescue", "t1", "--on-exhausted", "wait"}, 2, ErrUsage, "rescue: --on-exhausted needs a budget"},
		{[]string{"resume", "t1", "more", "--budget-output-tokens", "-5"}, 1, contract.ErrInvalidInput, "budget.outputTokens"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			runCLI(t, nil, nil, "", tc.args...).wantError(t, tc.code, tc.typ, tc.msg)
		})
	}
}

// budgetHandle answers the raise-budget update with st (or fails with err).
func budgetHandle(t *testing.T, st contract.BudgetStatus, err error) *mocks.WorkflowUpdateHandle {
	h := mocks.NewWorkflowUpdateHandle(t)
	if err != nil {
		h.On("Get", mock.Anything, mock.Anything).Return(err)
		return h
	}
	h.On("Get", mock.Anything, mock.Anything).Return(func(_ context.Context, ptr any) error {
		*ptr.(*contract.BudgetStatus) = st
		return nil
	})
	return h
}

func TestRaiseBudgetCommand(t *testing.T) {
	m := mocks.NewClient(t)
	st := contract.BudgetStatus{Limit: contract.Budget{Amounts: contract.Amounts{Units: contract.Amount(1500)}},
		Used: contract.Spend{Units: 900, InputTokens: 4000, OutputTokens: 300}, Left: contract.Amounts{Units: contract.Amount(600)}, Raises: 1}
	var sent client.UpdateWorkflowOptions
	m.On("UpdateWorkflow", mock.Anything, mock.Anything).
		Run(func(a mock.Arguments) { sent = a.Get(1).(client.UpdateWorkflowOptions) }).
		Return(budgetHandle(t, st, nil), nil).Once()
	r := runCLI(t, m, nil, "", "raise-budget", "t1", "--units", "500", "--by", "ops")
	var got contract.BudgetStatus
	r.wantOK(t, &got)
	if got.Left.Units == nil || *got.Left.Units != 600 || got.Raises != 1 || got.Used.InputTokens != 4000 || !strings.Contains(r.stdout, `"left": {`) {
		t.Errorf("printed %s", r.stdout)
	}
	a, ok := sent.Args[0].(contract.RaiseBudgetArgs)
	if sent.WorkflowID != "t1" || sent.UpdateName != contract.UpdateRaiseBudget || sent.WaitForStage != client.WorkflowUpdateStageCompleted || !ok ||
		a.Units == nil || *a.Units != 500 || a.InputTokens != nil || a.OutputTokens != nil || a.By != "ops" {
		t.Errorf("update %+v, argument %+v", sent, a)
	}

	// The task's refusal (a validator's *contract.Error as Temporal carries it).
	m.On("UpdateWorkflow", mock.Anything, mock.Anything).
		Return(budgetHandle(t, contract.BudgetStatus{}, temporal.NewApplicationError("INVALID_INPUT: raise-budget: this task has no budget; start it with StartArgs budget", "Error")), nil).Once()
	runCLI(t, m, nil, "", "raise-budget", "t2", "--input-tokens", "10").wantError(t, 1, contract.ErrInvalidInput, "this task has no budget")
}

func TestRaiseBudgetCommandRefusedWithoutDialing(t *testing.T) {
	cases := []struct {
		args     []string
		code     int
		typ, msg string
	}{
		{[]string{"raise-budget"}, 2, ErrUsage, "raise-budget: TASK_ID is missing"},
		{[]string{"raise-budget", "t1"}, 2, ErrUsage, "give what to add: --units N"},
		{[]string{"raise-budget", "t1", "t2", "--units", "5"}, 2, ErrUsage, "unexpected arguments"},
		{[]string{"raise-budget", "t1", "--units", "0"}, 1, contract.ErrInvalidInput, "raise-budget.units: 0 must be between 1"},
		{[]string{"raise-budget", "t1", "--output-tokens", "1125899906842625"}, 1, contract.ErrInvalidInput, "raise-budget.outputTokens"},
		{[]string{"raise-budget", "t1", "--units", "5", "--by", strings.Repeat("x", 257)}, 1, contract.ErrInvalidInput, "raise-budget.by: at most 256 bytes"},
		{[]string{"raise-budget", "t1", "--tokens", "5"}, 2, ErrUsage, "unknown flag --tokens"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			runCLI(t, nil, nil, "", tc.args...).wantError(t, tc.code, tc.typ, tc.msg)
		})
	}
	for _, s := range []string{"raise-budget TASK_ID [--units N] [--input-tokens N] [--output-tokens N] [--by NAME]",
		"[--budget-units N] [--budget-input-tokens N] [--budget-output-tokens N]", "[--on-exhausted wait|fail]", "awaiting_budget", "BUDGET_EXCEEDED"} {
		if !strings.Contains(Usage, s) {
			t.Errorf("Usage does not mention %q", s)
		}
	}
}

func TestResultCommandBudgetExceeded(t *testing.T) {
	m := mocks.NewClient(t)
	details := contract.BudgetExceeded{Records: []contract.Collected{{Name: "city", Value: json.RawMessage(`"Paris"`)}},
		Usage:  contract.Usage{InputTokens: 120, OutputTokens: 30},
		Budget: contract.BudgetStatus{Limit: contract.Budget{Amounts: contract.Amounts{Units: contract.Amount(10)}, OnExhausted: contract.OnExhaustedFail}, Left: contract.Amounts{Units: contract.Amount(2)}}}
	wr := mocks.NewWorkflowRun(t)
	wr.On("Get", mock.Anything, mock.Anything).Return(temporal.NewNonRetryableApplicationError("the next model call may cost more than is left", contract.ErrBudgetExceeded, nil, details)).Once()
	m.On("GetWorkflow", mock.Anything, "t1", "").Return(wr)
	r := runCLI(t, m, nil, "", "result", "t1")
	r.wantError(t, 1, starter.ErrBudgetExceeded, "more than is left")
	var e struct {
		Error struct {
			Details contract.BudgetExceeded `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stderr), &e); err != nil {
		t.Fatal(err)
	}
	d := e.Error.Details
	if len(d.Records) != 1 || d.Records[0].Name != "city" || d.Usage.InputTokens != 120 || d.Budget.Left.Units == nil || *d.Budget.Left.Units != 2 {
		t.Errorf("details %s", r.stderr)
	}
}
