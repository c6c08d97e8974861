package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/a2a"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// remoteAgent is integration/a2a/agent.mjs, a remote agent on the
// official A2A JavaScript SDK's server, and what it printed.
type remoteAgent struct {
	port   int
	mu     sync.Mutex
	events []map[string]any
}

// startRemoteAgent runs agent.mjs until the test ends: a new task works
// askAfter, asks a question, then works workFor after the reply.
func startRemoteAgent(t *testing.T, token string, askAfter, workFor time.Duration) *remoteAgent {
	t.Helper()
	dir, err := filepath.Abs("a2a")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "node_modules", "express"))
	require.NoError(t, err, "express is not installed: make test-deps runs npm ci in integration/a2a")
	cmd := exec.Command("node", "agent.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AGENT_TOKEN="+token,
		fmt.Sprintf("ASK_AFTER_MS=%d", askAfter.Milliseconds()), fmt.Sprintf("WORK_MS=%d", workFor.Milliseconds()))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	r := &remoteAgent{}
	listening := make(chan int, 1)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			var e map[string]any
			if json.Unmarshal(lines.Bytes(), &e) != nil {
				continue
			}
			if e["event"] == "listening" {
				listening <- int(e["port"].(float64))
			}
			r.mu.Lock()
			r.events = append(r.events, e)
			r.mu.Unlock()
		}
	}()
	select {
	case r.port = <-listening:
	case <-time.After(30 * time.Second):
		t.Fatal("agent.mjs did not start listening within 30s")
	}
	return r
}

func (r *remoteAgent) cardURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/.well-known/agent-card.json", r.port)
}

// seen are the events of kind what, in order.
func (r *remoteAgent) seen(what string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, e := range r.events {
		if e["event"] == what {
			out = append(out, e)
		}
	}
	return out
}

// shipperModel calls the shipping capability with what the user asked
// ("ship ...") and answers with what it returned.
func shipperModel(c testmodel.Call) testmodel.Reply {
	last := c.Messages[len(c.Messages)-1]
	if last.Role == "tool" {
		return testmodel.Reply{Text: "shipping says: " + last.Content}
	}
	if strings.HasPrefix(last.Content, "ship ") {
		return testmodel.Reply{ToolCalls: []testmodel.ToolCall{{ID: "call_ship", Name: "shipping", Arguments: jsonOf(map[string]string{"message": last.Content})}}}
	}
	return testmodel.Reply{Text: "echo: " + last.Content}
}

// A task's a2a capability calls a remote agent of the official A2A
// JavaScript SDK: the remote task works for minutes, which the task waits
// out with short activities between timers (no activity open meanwhile);
// the remote agent's question becomes an approval of ours whose answer is
// sent back; the worker is SIGKILLed while the remote task works and
// another takes over; the operator's token reaches the agent; and a
// cancel-turn cancels a running remote task.
func TestA2ACapabilityWaitsOutARemoteTaskAndRelaysItsQuestion(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.model.SetHandler(shipperModel)
	remote := startRemoteAgent(t, "s3cret-token", 20*time.Second, 150*time.Second)
	env := append(h.workerEnv(), a2a.EnvAgents+"=shipping="+remote.cardURL(), a2a.EnvPrefix("shipping")+"TOKEN=s3cret-token")
	first := startProcess(t, workerBinary(t), env, io.Discard)

	shipper := agent("shipper")
	shipper["capabilities"] = []any{map[string]any{"name": "shipping", "kind": "a2a", "remoteAgent": "shipping",
		"description": "Ship an order", "timeout": "15m", "approvalTimeout": "10m"}}
	id := "a2a-capability"
	run := startTask(t, h, id, map[string]any{"agent": shipper, "input": text("ship order o-7")})

	// The remote task asks which warehouse: our task waits for a person.
	var question contract.Approval
	eventually(t, 2*time.Minute, "the remote agent's question as an approval", func() bool {
		v, err := sdk.QueryWorkflow(ctxT(t, 10*time.Second), id, "", contract.QueryApprovals)
		var list []contract.Approval
		if err != nil || v.Get(&list) != nil {
			return false // the worker process is still starting
		}
		for _, a := range list {
			if a.Question != "" && a.Decision == nil {
				question = a
				return true
			}
		}
		return false
	})
	require.Equal(t, "t1.c1.i1", question.ID)
	require.Equal(t, "shipping", question.Capability)
	require.Equal(t, `Which warehouse should ship "ship order o-7"?`, question.Question)
	require.Equal(t, contract.StateAwaitingApproval, status(t, id).State)
	a, err := h.tasks.Answer(ctxT(t, 30*time.Second), id, question.ID, "Berlin", "tester")
	require.NoError(t, err)
	require.True(t, a.Decision.Approve)

	// The reply reached the remote task, which now works for minutes; the
	// worker dies meanwhile and another takes over.
	eventually(t, time.Minute, "the reply at the remote agent", func() bool { return len(remote.seen("message")) == 2 })
	reply := remote.seen("message")[1]
	require.Equal(t, "Berlin", reply["text"])
	require.Equal(t, true, reply["continuing"], "the reply continues the remote task")
	require.Equal(t, remote.seen("message")[0]["taskId"], reply["taskId"])
	time.Sleep(10 * time.Second)
	require.NoError(t, first.Process.Kill())
	_ = first.Wait()
	startProcess(t, workerBinary(t), env, io.Discard)

	st := waitOutputsWithin(t, id, 1, 5*time.Minute)
	require.Equal(t, contract.StateWaiting, st.State)
	require.Equal(t, "shipping says: shipped from Berlin", lastText(t, id))
	require.Len(t, remote.seen("completed"), 1)
	require.Empty(t, remote.seen("refused"), "every request carried the operator's token")

	// The history: short activities and timers, never one call held open.
	events := history(t, id, "")
	started := map[int64]time.Time{}
	names := map[int64]string{}
	count := map[string]int{}
	timers := 0
	var longest time.Duration
	for _, e := range events {
		if at := e.GetActivityTaskScheduledEventAttributes(); at != nil {
			names[e.GetEventId()] = at.GetActivityType().GetName()
		}
		if at := e.GetActivityTaskStartedEventAttributes(); at != nil {
			started[at.GetScheduledEventId()] = e.GetEventTime().AsTime()
		}
		if at := e.GetActivityTaskCompletedEventAttributes(); at != nil {
			name := names[at.GetScheduledEventId()]
			count[name]++
			if strings.Contains(name, "A2A") {
				longest = max(longest, e.GetEventTime().AsTime().Sub(started[at.GetScheduledEventId()]))
			}
		}
		if at := e.GetTimerStartedEventAttributes(); at != nil && strings.Contains(string(e.GetUserMetadata().GetSummary().GetData()), "A2A shipping") {
			timers++
		}
	}
	t.Logf("A2A activities %v, %d timers, the longest activity %s, %d events", count, timers, longest, len(events))
	require.Equal(t, 2, count[activities.SendA2AMessageName], "the message and the reply")
	require.GreaterOrEqual(t, count[activities.GetA2ATaskName], 6, "polls while the remote task worked")
	require.GreaterOrEqual(t, timers, 6, "a timer between polls")
	require.Less(t, longest, 30*time.Second, "every A2A activity is short")
	recordHistory(t, id, "", "a2a-capability")

	// A second remote task, canceled by our cancel-turn while it works.
	_, err = sendUpdate(t, id, text("ship order o-8"))
	require.NoError(t, err)
	eventually(t, time.Minute, "the second message at the remote agent", func() bool { return len(remote.seen("message")) == 3 })
	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "cancel-turn", nil))
	eventually(t, 30*time.Second, "the remote task canceled", func() bool { return len(remote.seen("canceled")) == 1 })
	require.Equal(t, remote.seen("message")[2]["taskId"], remote.seen("cancel")[0]["taskId"])
	require.Empty(t, approvalsPending(t, id))

	require.NoError(t, sdk.SignalWorkflow(ctxT(t, 5*time.Second), id, "", "close", nil))
	var res contract.Result
	require.NoError(t, run.Get(ctxT(t, time.Minute), &res))
}

// approvalsPending are the task's approvals not decided yet.
func approvalsPending(t *testing.T, id string) []contract.Approval {
	t.Helper()
	var out []contract.Approval
	for _, a := range approvalsOf(t, id) {
		if a.Decision == nil {
			out = append(out, a)
		}
	}
	return out
}
