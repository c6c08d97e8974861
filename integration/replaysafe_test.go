package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	sdkworkflow "go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/logging"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/internal/workerkit"
	"github.com/agenttask/agenttask/internal/workflows"
)

// An input refused while a run reads its state back (after continuing as
// new by reference) is refused again on replay. Validators do not run on
// replay: before, the validator noted that the input was still to be
// checked, and the handler, finding no note on replay, queued the refused
// input and sent it to the model, a history that no longer replayed.
func TestInputRefusedWhileRestoringReplaysTheSame(t *testing.T) {
	h := newHarness(t)
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Text: "ok " + c.Messages[len(c.Messages)-1].Content}
	})
	gate := newActivityGate(activities.StashGetName)
	h.startGatedWorker(gate)

	id := "refused-while-restoring"
	vars := map[string]any{}
	for i := range 60 {
		vars[fmt.Sprintf("v%02d", i)] = strings.Repeat(string(rune('a'+i%26)), 4000) // 240 KB
	}
	spec := agent("a")
	spec["instructions"] = strings.Repeat("Follow the house rules. ", 2_000) // 48 KB: with the variables, the state goes by reference
	spec["guardrails"] = []any{map[string]any{"name": "no-forbidden", "message": "forbidden words are refused",
		"expression": `i.all(p, !has(p.text) || !p.text.contains("forbidden"))`}}
	gate.close() // the restore after continue-as-new waits here until the test opens it
	startTask(t, h, id, map[string]any{"agent": spec, "continueAsNewEvents": 100, "variables": vars})

	// Turns until the run continues as new and starts reading its state.
	restoring := false
	for i := 0; !restoring; i++ {
		require.Less(t, i, 40, "the task continues as new within 40 turns")
		// A signal: an update sent just as the run continues would wait
		// for the state the gate holds back.
		require.NoError(t, sdk.SignalWorkflow(ctxT(t, 10*time.Second), id, "", contract.SignalInput, text(fmt.Sprint("turn ", i))))
		eventually(t, time.Minute, "the turn answered, or the next run reading its state", func() bool {
			v, err := sdk.QueryWorkflow(ctxT(t, 10*time.Second), id, "", "status")
			var st contract.Status
			if err != nil || v.Get(&st) != nil {
				return false
			}
			restoring = st.Run == 0 // the placeholder of a run reading its state back
			return restoring || (st.Outputs >= i+1 && st.State == contract.StateWaiting)
		})
	}
	require.Eventually(t, func() bool { return gate.waiting() > 0 }, time.Minute, 50*time.Millisecond, "the restore waits at the gate")

	// The input arrives while the run reads its state back: accepted for
	// now, refused by its guardrail once the state is read.
	uh, err := sdk.UpdateWorkflow(ctxT(t, time.Minute), client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: contract.UpdateSend,
		Args: []any{text("a forbidden word")}, WaitForStage: client.WorkflowUpdateStageAccepted})
	require.NoError(t, err, "accepted while the state is read back")
	gate.open()
	var res contract.SendResult
	err = uh.Get(ctxT(t, time.Minute), &res)
	require.Error(t, err)
	require.Equal(t, "GUARDRAIL", errType(err), "%v", err)
	require.Contains(t, err.Error(), "forbidden words are refused")

	// The task goes idle (it may first answer an input the previous run
	// carried): only then the next input, so a refused input queued by
	// mistake would start a turn of its own, a command history lacks.
	eventually(t, time.Minute, "the task idle", func() bool {
		st := status(t, id)
		return st.State == contract.StateWaiting && st.Queued == 0
	})
	before := messages(t, id, nil)
	_, err = sendUpdate(t, id, text("after"))
	require.NoError(t, err)
	st := waitOutputs(t, id, countOutputs(before)+1)
	require.Nil(t, st.Error)
	msgs := messages(t, id, nil)
	for _, m := range msgs {
		require.NotContains(t, *m.Message[0].Text, "forbidden", "the refused input is neither listed nor answered")
	}
	require.Equal(t, "ok after", *msgs[len(msgs)-1].Message[0].Text)
	require.Equal(t, 0, st.Queued)

	// The run's history replays, the refusal decided the same way.
	r := sdkworker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions((&workflows.Workflows{}).AgentTask, sdkworkflow.RegisterOptions{Name: contract.WorkflowType})
	events := history(t, id, "")
	require.NoError(t, r.ReplayWorkflowHistoryWithOptions(nil, &historypb.History{Events: events},
		sdkworker.ReplayWorkflowHistoryOptions{OriginalExecution: sdkworkflow.Execution{ID: id}}))
	recordHistory(t, id, "", "refused-while-restoring")
}

// startGatedWorker runs an in-process worker whose activities of the gate's
// type wait while the gate is closed.
func (h *harness) startGatedWorker(g *activityGate) {
	h.t.Helper()
	z, err := logging.New("warn", false)
	require.NoError(h.t, err)
	wc, err := client.NewClientFromExisting(sdk, client.Options{Logger: logging.NewSDKLogger(z), Interceptors: []interceptor.ClientInterceptor{g}})
	require.NoError(h.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- workerkit.Run(ctx, h.workerConfig(), wc) }()
	h.t.Cleanup(func() {
		g.open()
		cancel()
		if err := <-done; err != nil {
			h.t.Errorf("worker: %v", err)
		}
		wc.Close()
	})
}

// activityGate holds activities of one type while closed (a worker
// interceptor, installed through the client).
type activityGate struct {
	interceptor.InterceptorBase
	name string

	mu      sync.Mutex
	ch      chan struct{} // closed when open
	blocked int
}

func newActivityGate(name string) *activityGate {
	g := &activityGate{name: name, ch: make(chan struct{})}
	close(g.ch)
	return g
}

func (g *activityGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.ch:
		g.ch = make(chan struct{})
	default:
	}
}

func (g *activityGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.ch:
	default:
		close(g.ch)
	}
}

func (g *activityGate) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.blocked
}

func (g *activityGate) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &gatedActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, g: g}
}

type gatedActivity struct {
	interceptor.ActivityInboundInterceptorBase
	g *activityGate
}

func (a *gatedActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	if activity.GetInfo(ctx).ActivityType.Name == a.g.name {
		a.g.mu.Lock()
		ch := a.g.ch
		a.g.blocked++
		a.g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		a.g.mu.Lock()
		a.g.blocked--
		a.g.mu.Unlock()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return a.Next.ExecuteActivity(ctx, in)
}
