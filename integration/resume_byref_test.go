package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/internal/transcript"
	"github.com/agenttask/agenttask/internal/workflows"
	"github.com/agenttask/agenttask/starter"
)

// byRefAnswer answers "ok <last message>" when the request's instructions
// are whole (they begin with begin and end in END-OF-RULES), and says what
// is missing otherwise: a task restarted without its agent spec or its
// variables answers differently.
func byRefAnswer(begin string) func(c testmodel.Call) testmodel.Reply {
	return func(c testmodel.Call) testmodel.Reply {
		sys := c.Messages[0].Content
		if !strings.HasPrefix(sys, begin) || !strings.Contains(sys, "END-OF-RULES") {
			return testmodel.Reply{Text: fmt.Sprintf("INSTRUCTIONS MISSING: %d bytes: %.80q", len(sys), sys)}
		}
		return testmodel.Reply{Text: "ok " + c.Messages[len(c.Messages)-1].Content}
	}
}

// turnsUntilRun sends inputs to task id, each answered before the next,
// until the task runs its run-th run.
func turnsUntilRun(t *testing.T, id string, run int) contract.Status {
	t.Helper()
	st := waitOutputs(t, id, 1)
	for i := 0; status(t, id).Run < run; i++ {
		require.Less(t, i, 30*run, "run %d not reached after %d turns", run, i)
		_, err := sendUpdate(t, id, text(fmt.Sprint("turn ", i)))
		require.NoError(t, err)
		st = waitOutputs(t, id, st.Outputs+1)
		require.Nil(t, st.Error)
	}
	return status(t, id)
}

// startArgsOf decodes the start argument of a run (runID "": the latest).
func startArgsOf(t *testing.T, id, runID string) (workflows.StartArgs, string) {
	t.Helper()
	start := history(t, id, runID)[0].GetWorkflowExecutionStartedEventAttributes()
	var args workflows.StartArgs
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(start.GetInput(), &args))
	return args, string(start.GetInput().GetPayloads()[0].GetData())
}

// A completed task whose state went by reference at continue-as-new (its
// latest run's start argument is only {"carryRef": ...}) is resumed by
// `starter resume`: the new task has the whole agent spec and variables,
// the secret's real value, the collected value kept by reference copied
// whole into its own stash, and the old conversation; it answers.
func TestResumeOfATaskContinuedByReference(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	id := "byref-resume"
	const secret = "s3cr3t-by-reference"
	vars := map[string]any{"api_key": secret}
	for i := range 60 {
		vars[fmt.Sprintf("v%02d", i)] = strings.Repeat(string(rune('a'+i%26)), 4000) // 240 KB
	}
	begin := "BEGIN " + strings.Repeat("b", 4000)
	ag := agent("a")
	ag["instructions"] = "BEGIN {{v01}} Key: {{api_key}}. " + strings.Repeat("Follow the house rules. ", 4_800) + " END-OF-RULES"
	notes := strings.Repeat("eight kilobytes of notes from the caller; ", 200)[:8_000] // kept by reference
	h.model.SetHandler(byRefAnswer(begin))
	startTask(t, h, id, map[string]any{"agent": ag, "continueAsNewEvents": 100, "variables": vars,
		"secrets": []string{"api_key"}, "collected": map[string]any{"notes": notes}, "input": text("turn start")})
	turnsUntilRun(t, id, 2)
	latest, raw := startArgsOf(t, id, "")
	require.NotNil(t, latest.CarryRef, "the latest run starts from a reference: %.200s", raw)
	require.Nil(t, latest.Carry)
	closeAndWait(t, id)
	old := texts(messages(t, id, nil))
	require.Equal(t, "turn start", old[0])
	require.Equal(t, "ok turn start", old[1])

	out, stderr, code := cli(t, h, "resume", id, "a new question", "--task-id", "byref-resumed")
	require.Equal(t, 0, code, "starter resume: %s", stderr)
	require.JSONEq(t, `{"task_id":"byref-resumed"}`, out)
	st := waitOutputs(t, "byref-resumed", 1)
	require.Nil(t, st.Error)
	msgs := messages(t, "byref-resumed", nil)
	require.Equal(t, append(append([]string(nil), old...), "a new question", "ok a new question"), texts(msgs),
		"the old conversation, then the new input and its answer (the model saw the whole instructions, variables filled)")
	requireSeedOrder(t, msgs)

	// The new task's start argument holds the secret's real value (read
	// from the old task's first run); no model request shows it.
	args, _ := startArgsOf(t, "byref-resumed", "")
	require.JSONEq(t, `"`+secret+`"`, string(args.Variables["api_key"]))
	require.Equal(t, []string{"api_key"}, args.Secrets)
	require.Nil(t, args.CarryRef)
	for _, c := range h.model.Calls() {
		require.NotContains(t, string(c.Raw), secret)
	}
	d, err := sdk.DescribeWorkflowExecution(ctxT(t, 5*time.Second), "byref-resumed", "")
	require.NoError(t, err)
	require.Contains(t, string(d.GetWorkflowExecutionInfo().GetMemo().GetFields()[starter.MemoResumedFrom].GetData()), id)

	// The collected value kept by reference is whole in the new task's stash.
	v, err := sdk.QueryWorkflow(ctxT(t, 10*time.Second), "byref-resumed", "", contract.QueryCollected)
	require.NoError(t, err)
	var got []contract.Collected
	require.NoError(t, v.Get(&got))
	var ref *contract.Collected
	for i := range got {
		if got[i].Name == "notes" {
			ref = &got[i]
		}
	}
	require.NotNil(t, ref, "notes collected: %v", got)
	require.NotNil(t, ref.Ref, "notes kept by reference")
	store, err := transcript.Open(context.Background(), h.transcript)
	require.NoError(t, err)
	defer store.Close()
	var whole string
	require.NoError(t, store.GetOnce(context.Background(), transcript.Key{TaskID: "byref-resumed", FirstRunID: d.GetWorkflowExecutionInfo().GetFirstRunId()}, ref.Ref.Stash, &whole))
	require.Equal(t, notes, whole)
}

// A task that continued as new five times, each time by reference (its
// 96 KB agent spec and 200 KB of variables), is canceled, and the history of every run before
// its latest is deleted (as retention would): rescue reads what it needs
// from the latest run. Without the secret it is refused, naming it; with
// `starter rescue --var` the new task answers and lists every earlier
// entry.
func TestRescueAfterManyRunsByReference(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	id := "byref-many-runs"
	begin := "BEGIN Key: [secret]. "
	ag := agent("a")
	ag["instructions"] = "BEGIN Key: {{api_key}}. " + strings.Repeat("Follow the house rules. ", 4_000) + " END-OF-RULES" // 96 KB
	vars := map[string]any{"api_key": "s3cr3t-many"}
	for i := range 50 {
		vars[fmt.Sprintf("v%02d", i)] = strings.Repeat(string(rune('a'+i%26)), 4000) // 200 KB
	}
	h.model.SetHandler(byRefAnswer(begin))
	startTask(t, h, id, map[string]any{"agent": ag, "continueAsNewEvents": 100, "mode": "conversation",
		"variables": vars, "secrets": []string{"api_key"}, "input": text("turn start")})
	st := turnsUntilRun(t, id, 6)
	latest, raw := startArgsOf(t, id, "")
	require.NotNil(t, latest.CarryRef, "the latest run starts from a reference: %.200s", raw)
	old := texts(messages(t, id, nil))
	require.Len(t, old, st.Messages)

	// Canceled, and every run but the latest deleted.
	d, err := sdk.DescribeWorkflowExecution(ctxT(t, 5*time.Second), id, "")
	require.NoError(t, err)
	latestRun := d.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	require.NoError(t, sdk.CancelWorkflow(ctxT(t, 5*time.Second), id, ""))
	err = sdk.GetWorkflow(ctxT(t, 30*time.Second), id, latestRun).Get(ctxT(t, 30*time.Second), nil)
	require.Error(t, err, "canceled")
	var runs []string
	for runID := latestRun; ; {
		events := history(t, id, runID)
		prev := events[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if prev == "" {
			break
		}
		runs = append(runs, prev)
		runID = prev
	}
	require.Len(t, runs, st.Run-1, "the chain of runs")
	for _, runID := range runs {
		_, err := sdk.WorkflowService().DeleteWorkflowExecution(ctxT(t, 10*time.Second), &workflowservice.DeleteWorkflowExecutionRequest{
			Namespace: temporalNS, WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: runID}})
		require.NoError(t, err)
	}
	for _, runID := range runs {
		eventually(t, 90*time.Second, "run "+runID+" deleted", func() bool {
			_, err := sdk.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT).Next()
			var nf *serviceerror.NotFound
			return errors.As(err, &nf)
		})
	}

	// The secret's value was only in the first run: the rescue asks for it.
	_, err = h.tasks.Rescue(ctxT(t, 30*time.Second), id, nil, starter.StartOptions{TaskID: "byref-many-rescued"})
	require.Equal(t, contract.ErrInvalidInput, contract.TypeOf(err), "%v", err)
	require.Contains(t, err.Error(), "api_key")

	out, stderr, code := cli(t, h, "rescue", id, "--input", "after the cancel", "--task-id", "byref-many-rescued", "--var", `api_key="s3cr3t-many"`)
	require.Equal(t, 0, code, "starter rescue: %s", stderr)
	require.JSONEq(t, `{"task_id":"byref-many-rescued"}`, out)
	st2 := waitOutputs(t, "byref-many-rescued", 1)
	require.Nil(t, st2.Error)
	msgs := messages(t, "byref-many-rescued", nil)
	require.Equal(t, append(append([]string(nil), old...), "after the cancel", "ok after the cancel"), texts(msgs))
	requireSeedOrder(t, msgs)
	args, _ := startArgsOf(t, "byref-many-rescued", "")
	require.JSONEq(t, `"s3cr3t-many"`, string(args.Variables["api_key"]))
	require.Equal(t, contract.ModeConversation, args.Mode)
	dn, err := sdk.DescribeWorkflowExecution(ctxT(t, 5*time.Second), "byref-many-rescued", "")
	require.NoError(t, err)
	require.Contains(t, string(dn.GetWorkflowExecutionInfo().GetMemo().GetFields()[starter.MemoRescuedFrom].GetData()), id)
	closeAndWait(t, "byref-many-rescued")
}
