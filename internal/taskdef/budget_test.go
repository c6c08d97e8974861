package taskdef

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

// A task's budget (docs/budgets.md#the-tasks-api) decodes strictly, is checked
// as contract.CheckBudget checks StartArgs budget, naming the field, and
// is stored with the definition.
func TestTaskBudget(t *testing.T) {
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(seedTask), &body))
	body["budget"] = map[string]any{"units": 5000, "outputTokens": 800, "onExhausted": "fail"}
	raw, _ := json.Marshal(body)
	d, fe := Decode(raw)
	require.Nil(t, fe)
	require.Nil(t, Validate(&d, seedVars, models))
	require.Equal(t, &contract.Budget{Amounts: contract.Amounts{Units: contract.Amount(5000), OutputTokens: contract.Amount(800)}, OnExhausted: "fail"}, d.Budget)

	stored, err := json.Marshal(d)
	require.NoError(t, err)
	var back Definition
	require.NoError(t, json.Unmarshal(stored, &back))
	require.Equal(t, d.Budget, back.Budget, "stored with the definition")

	d, fe = Decode([]byte(seedTask))
	require.Nil(t, fe)
	require.Nil(t, d.Budget, "no budget: runs are unbounded")
	stored, _ = json.Marshal(d)
	require.NotContains(t, string(stored), "budget", "a task without a budget stores none (tasks stored before it read the same)")

	for _, tc := range []struct{ budget, field, detail string }{
		{`{"units": "many"}`, "budget.units", "must be an integer"},
		{`{"units": 1.5}`, "budget.units", "must be an integer"},
		{`{"unit": 5}`, "budget.unit", "unknown field"},
		{`[5]`, "budget", "must be an object"},
		{`{}`, "budget", "give at least one of units, inputTokens, outputTokens"},
		{`{"onExhausted": "fail"}`, "budget", "give at least one of"},
		{`{"units": -1}`, "budget.units", "-1 must be between 0 and"},
		{`{"inputTokens": 1125899906842625}`, "budget.inputTokens", "must be between 0 and 1125899906842624"},
		{`{"units": 5, "onExhausted": "stop"}`, "budget.onExhausted", `"stop" must be "wait"`},
	} {
		t.Run(tc.budget, func(t *testing.T) {
			body["budget"] = json.RawMessage(tc.budget)
			raw, _ := json.Marshal(body)
			d, fe := Decode(raw)
			if fe == nil {
				fe = Validate(&d, seedVars, models)
			}
			require.NotNil(t, fe)
			require.Equal(t, tc.field, fe.Field)
			require.Contains(t, fe.Detail, tc.detail)
		})
	}
}

// A run request may give its own budget, checked the same.
func TestRunBudget(t *testing.T) {
	r, fe := DecodeRun([]byte(`{"input": "My order is late.", "variables": {"customer": "Amina"}, "budget": {"units": 40}}`))
	require.Nil(t, fe)
	require.Equal(t, &contract.Budget{Amounts: contract.Amounts{Units: contract.Amount(40)}}, r.Budget)
	d := validDef()
	require.Nil(t, Validate(&d, seedVars, models))
	require.Nil(t, CheckRun(d, r))

	r.Budget = &contract.Budget{OnExhausted: "wait"}
	fe = CheckRun(d, r)
	require.NotNil(t, fe)
	require.Equal(t, "budget", fe.Field)

	_, fe = DecodeRun([]byte(`{"budget": {"units": 4, "by": "me"}}`))
	require.NotNil(t, fe)
	require.Equal(t, "budget.by", fe.Field)
}
