package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/agenttask/agenttask/contract"
)

// Turn overhead: one fresh AgentTask conversation and one BareLoop, driven
// alternately (an AgentTask turn, then a BareLoop turn, and so on) on the
// same server by the same client and worker process, so whatever slows the
// machine down slows both alike. Both ask the same model endpoint. A
// second BareLoop that answers in process (no model call, the baseline
// until 2026-12-03) takes its turn after them, for reference.

// overheadResult holds the measured (post-warm-up) turns of both sides.
type overheadResult struct {
	Warm, N     int
	Pause       time.Duration
	Agent, Bare []turnTiming
	InProcess   []turnTiming // the BareLoop answering in process
	// Server-side phases of the same turns, from each workflow's history.
	AgentPhases, BarePhases, InProcessPhases []turnPhases
	// Bytes of the same turns' events (proto.Size, as the history
	// measurement counts them), and their means by event type.
	AgentBytes, BareBytes   []int
	AgentByType, BareByType map[enumspb.EventType]float64
	// The bytes of the texts in the model request each measured turn sent:
	// AgentTask's by its model activity's result (request_bytes), BareLoop's
	// as its model counted them.
	AgentRequests, BareRequests []int
	Elapsed                     time.Duration
}

// Turns are paced: after each turn the driver pauses, so the server's
// workflow-task dispatch is never the bottleneck. The embedded server has one
// history shard, and a shard's transfer queue (which hands every workflow
// task to matching) polls at most history.transferProcessorMaxPollRPS = 20
// times a second (burst 20); turns back to back ask for more than that, and
// then every workflow task waits for the next 50 ms tick, for both
// workflows alike: the measurement would time the rate limiter.
func measureOverhead(ctx context.Context, c client.Client, agentQueue string, bare bareModel, warm, n int, pause time.Duration, progress func(string)) (*overheadResult, error) {
	start := time.Now()
	agentID := fmt.Sprintf("bench-overhead-agent-%d", start.UnixNano())
	bareID := fmt.Sprintf("bench-overhead-bare-%d", start.UnixNano())
	agentRun, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: agentID, TaskQueue: agentQueue}, contract.WorkflowType,
		map[string]any{"agent": leanAgent(), "idleTimeout": "1h"})
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", agentID, err)
	}
	bareRun, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: bareID, TaskQueue: bareQueue}, bareWorkflow, bareAnswer)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", bareID, err)
	}
	localID := fmt.Sprintf("bench-overhead-bare-in-process-%d", start.UnixNano())
	localRun, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: localID, TaskQueue: bareQueue}, bareWorkflow, bareAnswerInProcess)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", localID, err)
	}
	r := &overheadResult{Warm: warm, N: n, Pause: pause}
	for k := 1; k <= warm+n; k++ {
		a, err := agentTurn(ctx, c, agentID, k, 2*(k-1))
		if err != nil {
			return nil, err
		}
		time.Sleep(pause)
		b, err := bareTurn(ctx, c, bareID, k, k-1)
		if err != nil {
			return nil, err
		}
		time.Sleep(pause)
		l, err := bareTurn(ctx, c, localID, k, k-1)
		if err != nil {
			return nil, err
		}
		time.Sleep(pause)
		if k > warm {
			r.Agent = append(r.Agent, a)
			r.Bare = append(r.Bare, b)
			r.InProcess = append(r.InProcess, l)
		}
		if k%100 == 0 {
			progress(fmt.Sprintf("overhead: %d/%d turn pairs (%s)", k, warm+n, time.Since(start).Round(time.Second)))
		}
	}
	r.Elapsed = time.Since(start)

	// The server's view of the same turns.
	r.AgentByType, r.BareByType = map[enumspb.EventType]float64{}, map[enumspb.EventType]float64{}
	for _, side := range []struct {
		id, runID, signal string
		into              *[]turnPhases
		bytes             *[]int
		byType            map[enumspb.EventType]float64
	}{
		{agentID, agentRun.GetRunID(), contract.SignalInput, &r.AgentPhases, &r.AgentBytes, r.AgentByType},
		{bareID, bareRun.GetRunID(), bareSignal, &r.BarePhases, &r.BareBytes, r.BareByType},
		{localID, localRun.GetRunID(), bareSignal, &r.InProcessPhases, new([]int), map[enumspb.EventType]float64{}},
	} {
		events, runs, err := readChain(ctx, c, side.id, side.runID)
		if err != nil {
			return nil, err
		}
		if len(runs) != 1 {
			return nil, fmt.Errorf("%s continued as new during the overhead measurement; lower the turn count", side.id)
		}
		spans := splitTurns(events, side.signal)
		if len(spans) != warm+n {
			return nil, fmt.Errorf("%s: %d turns in history, want %d", side.id, len(spans), warm+n)
		}
		for _, sp := range spans[warm:] {
			if side.id == agentID {
				r.AgentRequests = append(r.AgentRequests, requestBytesOf(sp))
			}
			*side.into = append(*side.into, phasesOf(sp))
			*side.bytes = append(*side.bytes, sp.bytes())
			for _, e := range sp.events {
				side.byType[e.GetEventType()] += float64(proto.Size(e.HistoryEvent)) / float64(n)
			}
		}
	}
	if sizes := bare.chats.requestSizes(bareID); len(sizes) == warm+n {
		r.BareRequests = sizes[warm:]
	} else {
		return nil, fmt.Errorf("%s: the model answered %d requests, want %d", bareID, len(sizes), warm+n)
	}
	_ = c.SignalWorkflow(ctx, agentID, "", contract.SignalClose, nil)
	_ = c.TerminateWorkflow(ctx, bareID, "", "bench done")
	_ = c.TerminateWorkflow(ctx, localID, "", "bench done")
	return r, nil
}

// requestBytesOf is the size of the model request a turn's model activity
// reported last (0 if none did): the results are plain JSON, the bench
// runs without a codec.
func requestBytesOf(sp turnSpan) int {
	n := 0
	for _, e := range sp.events {
		if e.GetEventType() != enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED {
			continue
		}
		for _, pl := range e.GetActivityTaskCompletedEventAttributes().GetResult().GetPayloads() {
			var res struct {
				RequestBytes int `json:"request_bytes"`
			}
			if json.Unmarshal(pl.GetData(), &res) == nil && res.RequestBytes > 0 {
				n = res.RequestBytes
			}
		}
	}
	return n
}

// leanProvider is the overhead's model endpoint: startLoadModel's.
const leanProvider = "lean"

// leanAgent is benchAgent on the lean model.
func leanAgent() map[string]any {
	a := benchAgent()
	a["model"] = leanProvider + "/echo"
	return a
}

// summary is the distribution of one side's turn times.
type summary struct {
	Median, P90, Mean, Min time.Duration
	Signal                 time.Duration // median time of the SignalWorkflow call
	PollsMedian            int           // median queries per turn
}

func summarize(ts []turnTiming) summary {
	total := make([]time.Duration, len(ts))
	sig := make([]time.Duration, len(ts))
	polls := make([]int, len(ts))
	var sum time.Duration
	for i, t := range ts {
		total[i], sig[i], polls[i] = t.Total, t.Signal, t.Polls
		sum += t.Total
	}
	slices.Sort(polls)
	return summary{
		Median: percentile(total, 50), P90: percentile(total, 90), Mean: sum / time.Duration(len(ts)),
		Min: slices.Min(total), Signal: percentile(sig, 50), PollsMedian: polls[len(polls)/2],
	}
}

func serverTotals(ps []turnPhases) []time.Duration {
	out := make([]time.Duration, len(ps))
	for i, p := range ps {
		out[i] = p.total
	}
	return out
}

// percentile is the nearest-rank percentile p (0-100) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// meanInt is the mean of xs (0 for none).
func meanInt(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	sum := 0
	for _, x := range xs {
		sum += x
	}
	return float64(sum) / float64(len(xs))
}
