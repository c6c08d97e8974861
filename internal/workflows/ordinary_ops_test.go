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
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// rulesOrdinaryOps: ordinary operations never break a live task.

// A conversation fed an input during every turn never has an empty queue:
// the run continues as new before the next turn once it is due, the queue
// carried, instead of growing until Temporal's limits end it.
func TestBusyConversationContinuesAsNewBeforeTheNextTurn(t *testing.T) {
	m := &fakeModel{delay: time.Minute} // each turn takes a minute
	env := newEnv(t, m)
	saved := historyLength
	defer func() { historyLength = saved }()
	historyLength = func(workflow.Context) int { return 10 * len(m.calls) } // a turn is 10 events
	for i := range 60 {                                                     // an input every 30 s: two arrive during every turn
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalInput, textInput(fmt.Sprintf("m%d", i))) }, time.Duration(i+1)*30*time.Second)
	}
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalClose, nil) }, 31*time.Minute)
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Input: textInput("first"), ContinueAsNewEvents: 100}})
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(err, &can), "want continue-as-new with inputs still arriving, got %v after %d calls", err, len(m.calls))
	require.Equal(t, 10, len(m.calls), "continued as soon as it was due (10 turns of 10 events), not once the queue emptied")
	var next StartArgs
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.Carry)
	require.NotEmpty(t, next.Carry.Queue, "the inputs waiting for a turn are carried")
	for _, in := range next.Carry.Queue {
		require.Empty(t, in.CommittedAt)
		require.NotEmpty(t, in.ReceivedAt)
	}
}

// The inputs of a model call the budget refuses are not committed: while
// the task waits for a raise (and after it fails BUDGET_EXCEEDED) they show
// without committed_at, the read receipt of docs/contract.md. Once the call is made
// they commit, with what arrived meanwhile.
func TestInputsOfARefusedCallStayUncommitted(t *testing.T) {
	m := &budgetModel{worst: 10, used: 6}
	env := newBudgetEnv(t, m)
	var waiting, after []contract.Message
	var waitingStatus contract.Status
	raise := &raiseCallbacks{}
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalInput, textInput("two")) }, time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalInput, textInput("three")) }, 2*time.Minute)
	env.RegisterDelayedCallback(func() {
		waiting, waitingStatus = queryMessages(t, env, nil), queryStatus(t, env)
		env.UpdateWorkflow(contract.UpdateRaiseBudget, "r1", raise, contract.RaiseBudgetArgs{Amounts: contract.Amounts{Units: contract.Amount(10)}, By: "ops"})
	}, 3*time.Minute)
	env.RegisterDelayedCallback(func() {
		after = queryMessages(t, env, nil)
		env.SignalWorkflow(contract.SignalClose, nil)
	}, 4*time.Minute)
	env.ExecuteWorkflow(contract.WorkflowType, budgetArgs(15, ""))
	require.NoError(t, env.GetWorkflowError())

	require.Equal(t, contract.StateAwaitingBudget, waitingStatus.State)
	require.Equal(t, []string{"in:one:c", "out:ok:c", "in:two:-", "in:three:-"}, listed(waiting),
		"the refused call's input and the one that arrived while it waited are not committed")
	require.NoError(t, raise.err)
	require.Equal(t, []string{"in:one:c", "out:ok:c", "in:two:c", "in:three:c", "out:ok:c"}, listed(after),
		"the call made after the raise commits both, and answers them")
	requireOrdered(t, after)
	require.Len(t, m.calls, 3)
	last := m.calls[2]
	require.Equal(t, 4, last.End, "the call made after the raise shows both inputs")
	require.Equal(t, 2, last.TurnFrom)
}

// With onExhausted "fail" the inputs the model never saw stay uncommitted
// in the failed task's messages.
func TestBudgetExceededLeavesItsInputsUncommitted(t *testing.T) {
	m := &budgetModel{worst: 10, used: 6}
	env := newBudgetEnv(t, m)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalInput, textInput("two")) }, time.Minute)
	env.ExecuteWorkflow(contract.WorkflowType, budgetArgs(15, contract.OnExhaustedFail))
	require.Equal(t, contract.ErrBudgetExceeded, appErrorType(t, env.GetWorkflowError()))
	require.Equal(t, []string{"in:one:c", "out:ok:c", "in:two:-"}, listed(queryMessages(t, env, nil)))
}

// A turn canceled while its call waits for a raise commits its inputs, as
// every canceled turn does (docs/contract.md), at the instant the refused call
// first gave them.
func TestTurnCanceledWhileAwaitingBudgetCommitsItsInputs(t *testing.T) {
	m := &budgetModel{worst: 10, used: 6}
	env := newBudgetEnv(t, m)
	var waiting []contract.Message
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalInput, textInput("two")) }, time.Minute)
	env.RegisterDelayedCallback(func() {
		waiting = queryMessages(t, env, nil)
		env.SignalWorkflow(contract.SignalCancelTurn, nil)
	}, 2*time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalClose, nil) }, 3*time.Minute)
	env.ExecuteWorkflow(contract.WorkflowType, budgetArgs(15, ""))
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"in:one:c", "out:ok:c", "in:two:-"}, listed(waiting))
	require.Equal(t, []string{"in:one:c", "out:ok:c", "in:two:c"}, listed(queryMessages(t, env, nil)))
}

// listed is each message as type:text:committed (c) or not (-).
func listed(msgs []contract.Message) []string {
	var out []string
	for _, m := range msgs {
		text := ""
		if len(m.Message) > 0 && m.Message[0].Text != nil {
			text = *m.Message[0].Text
		}
		c := "-"
		if m.CommittedAt != "" {
			c = "c"
		}
		out = append(out, fmt.Sprintf("%s:%s:%s", strings.TrimSuffix(string(m.Type), "put"), text, c))
	}
	return out
}

// A run continued as new reads its start argument, which the runtime
// wrote, leniently: a field a newer build added is ignored, not refused
// (a rollback across a continue-as-new). A new task's stays strict.
func TestContinuedRunIgnoresFieldsOfANewerBuild(t *testing.T) {
	carried, err := json.Marshal(StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec()}, Carry: newCarry(time.Unix(0, 0))})
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(carried, &doc))
	doc["a_newer_setting"] = true
	doc["carry"].(map[string]any)["a_newer_field"] = map[string]any{"x": 1}
	newer, err := json.Marshal(doc)
	require.NoError(t, err)

	args, _, err := checkStartJSON(newer, latestRules)
	require.NoError(t, err)
	require.NotNil(t, args.Carry)
	_, _, err = checkStartJSON(newer, rulesFor(rulesLeanTurns))
	require.ErrorContains(t, err, "unknown field", "older rules refused it")

	fresh, err := json.Marshal(map[string]any{"agent": agentSpec(), "a_typo": 1})
	require.NoError(t, err)
	_, _, err = checkStartJSON(fresh, latestRules)
	require.ErrorContains(t, err, `unknown field "a_typo"`, "what a caller sends stays strict")
}

// A run continued from a run on rules newer than this worker knows fails
// its workflow task (retried until a newer worker takes it), naming the
// rules it needs; it never fails the task.
func TestRunContinuedFromNewerRulesFailsItsWorkflowTask(t *testing.T) {
	m := &fakeModel{}
	env := newEnv(t, m)
	env.SetContinuedExecutionRunID("the-previous-run")
	require.NoError(t, env.SetMemoOnStart(map[string]any{RulesMemo: int(rulesLatest) + 1}))
	args := StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec()}, Carry: newCarry(time.Unix(0, 0))}
	env.ExecuteWorkflow(contract.WorkflowType, args)
	err := env.GetWorkflowError()
	require.Error(t, err)
	require.ErrorContains(t, err, fmt.Sprintf("its carried state follows agent-task rules version %d; this worker knows rules up to %d", rulesLatest+1, rulesLatest))
	var pe *temporal.PanicError
	require.True(t, errors.As(err, &pe), "a workflow-task failure (a panic), not the task's failure: %T %v", err, err)
	require.Empty(t, m.calls)
	n, at := LastNewerRules()
	require.NotNil(t, n)
	require.WithinDuration(t, time.Now(), at, time.Minute)
	require.Equal(t, int(rulesLatest)+1, n.Needs)
}

// Under rulesOrdinaryOps a part key parts do not have is refused in a new
// task's start input and in the input signal too, not only by the send
// and ask updates.
func TestStartAndSignalRefuseAnUnknownContentPartKey(t *testing.T) {
	withBytes := map[string]any{"message": []any{map[string]any{"mimeType": "text/plain", "text": "x", "bytes": []int{1, 2, 3}}}}
	data, err := json.Marshal(map[string]any{"agent": agentSpec(), "input": withBytes})
	require.NoError(t, err)
	_, _, err = checkStartJSON(data, latestRules)
	require.ErrorContains(t, err, `"bytes"`)
	require.Equal(t, contract.ErrInvalidInput, contract.TypeOf(err))
	_, _, err = checkStartJSON(data, rulesFor(rulesLeanTurns))
	require.NoError(t, err, "older rules dropped the key: running tasks replay")

	env := newEnv(t, &fakeModel{})
	var st contract.Status
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalInput, withBytes) }, time.Second)
	env.RegisterDelayedCallback(func() {
		st = queryStatus(t, env)
		env.SignalWorkflow(contract.SignalClose, nil)
	}, time.Minute)
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec()}})
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, 1, st.Rejected)
	require.Contains(t, st.LastRejection.Message, `"bytes"`)
	require.Empty(t, queryMessages(t, env, nil), "the refused signal queued nothing")
}

// When a task ends, its last output's stamp (and anything else the
// transcript lacks) is written to the transcript by the workflow itself,
// so the transcript holds the whole conversation with retention off.
func TestTheLastOutputIsWrittenWhenTheTaskEnds(t *testing.T) {
	m := &fakeModel{}
	env := newEnv(t, m)
	var writes []activities.WriteEntriesInput
	env.OnActivity(activities.WriteEntriesName, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.WriteEntriesInput) error {
		writes = append(writes, in)
		return nil
	})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(contract.SignalClose, nil) }, time.Minute)
	env.ExecuteWorkflow(contract.WorkflowType, StartArgs{StartArgs: contract.StartArgs{Agent: agentSpec(), Input: textInput("hi")}})
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, writes, 1, "one write at the end")
	require.Len(t, writes[0].Entries.Stamps, 1)
	require.Equal(t, 1, writes[0].Entries.Stamps[0].Position, "the answer's stamp")
	require.NotEmpty(t, writes[0].Entries.Stamps[0].CommittedAt)
	require.Empty(t, writes[0].Entries.Write, "the input was written by the model call")
}

// A model call that fails for good after its requests were billed (its
// failure carries what they cost) is charged: the task's budget and usage
// count it, and so do the failure's details a parent reads.
func TestAFailedModelCallIsCharged(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions((&Workflows{}).AgentTask, workflow.RegisterOptions{Name: contract.WorkflowType})
	env.RegisterActivityWithOptions(func(ctx context.Context, in activities.ModelTurnInput) (*activities.ModelTurnResult, error) {
		return nil, temporal.NewNonRetryableApplicationError("the answer never fitted", contract.ErrModel, nil,
			activities.SpentOnFailure{Spent: &activities.Usage{Usage: contract.Usage{InputTokens: 396, OutputTokens: 30}}})
	}, activity.RegisterOptions{Name: activities.ModelTurnName})
	args := budgetArgs(0, "")
	args.Budget = &contract.Budget{Amounts: contract.Amounts{InputTokens: contract.Amount(10_000)}}
	env.ExecuteWorkflow(contract.WorkflowType, args)
	err := env.GetWorkflowError()
	require.Equal(t, contract.ErrModel, appErrorType(t, err))
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae))
	var d contract.BudgetExceeded
	require.NoError(t, ae.Details(&d))
	require.Equal(t, int64(396), d.Budget.Used.InputTokens, "the failed call's requests are charged to the budget")
	require.Equal(t, 396, d.Usage.InputTokens, "and counted in the task's usage")
}

// The built-in save keeps at most MaxCollectedNames names: a new name past
// it is answered with an error the model reads (older rules forgot the
// oldest value without a word), a known name is replaced.
func TestSavedNamesAreBounded(t *testing.T) {
	tk := &task{rules: latestRules, durable: newCarry(time.Unix(0, 0))}
	for i := range MaxCollectedNames {
		tk.durable.Collected = append(tk.durable.Collected, contract.Collected{Name: fmt.Sprint("n", i), Value: json.RawMessage(`1`)})
	}
	got := tk.durable.saveCall(activities.ToolCall{Name: activities.BuiltinSave, Arguments: `{"name":"one_more","value":2}`}, tk.rules.boundedNames, tk.secrets())
	require.Contains(t, got, fmt.Sprintf("error: this task already holds %d saved values", MaxCollectedNames))
	require.Len(t, tk.durable.Collected, MaxCollectedNames)
	require.Equal(t, "saved n7", tk.durable.saveCall(activities.ToolCall{Name: activities.BuiltinSave, Arguments: `{"name":"n7","value":3}`}, tk.rules.boundedNames, tk.secrets()))

	older := &task{rules: rulesFor(rulesLeanTurns), durable: newCarry(time.Unix(0, 0))}
	older.durable.Collected = append([]contract.Collected(nil), tk.durable.Collected...)
	require.Equal(t, "saved one_more", older.durable.saveCall(activities.ToolCall{Name: activities.BuiltinSave, Arguments: `{"name":"one_more","value":2}`}, older.rules.boundedNames, older.secrets()), "older rules saved it")
	older.durable.bound()
	require.Len(t, older.durable.Collected, MaxCollectedNames, "and silently forgot the oldest")
	require.Equal(t, "n1", older.durable.Collected[0].Name)
}
