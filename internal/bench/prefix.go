package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/internal/transcript"
	"github.com/agenttask/agenttask/internal/workerkit"
	"github.com/agenttask/agenttask/internal/workflows"
)

// Cache-stable requests: one conversation of prefixTurns turns
// on an agent whose window its history outgrows several times, and what
// each model request shares, byte for byte from its start, with the
// previous one, as the test model received them. A provider's prompt cache
// bills that shared prefix at its cached price. The same conversation runs
// twice: with the window as shipped (a fixed start, moved a block at a
// time) and with the window before it (the longest suffix that fits,
// moving one entry each turn once full), on a worker of its own.

const (
	prefixTurns      = 200
	prefixFrom       = 20 // the turns averaged: prefixFrom..prefixTurns
	minPrefixShare   = 0.90
	prefixContext    = 8000 // the agent's contextTokens: a window of about 31 KB
	prefixBeforeQ    = "bench-prefix-before"
	prefixInputBytes = 100
)

type prefixSide struct {
	Name      string
	Shares    []float64 // per turn (1-based index i-1): shared bytes / request bytes
	Requests  []int     // request bytes per turn
	Moves     int       // turns whose window start moved
	Elapsed   time.Duration
	HistoryKB float64 // the conversation's entries at the end
}

type prefixResult struct {
	After, Before prefixSide
	BudgetKB      float64
}

func (s prefixSide) mean(from, to int) float64 {
	sum, n := 0.0, 0
	for t := from; t <= to && t <= len(s.Shares); t++ {
		sum += s.Shares[t-1]
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// measurePrefix runs both sides: after on the bench's worker (agentQueue),
// before on a worker of its own with the sliding window.
func measurePrefix(ctx context.Context, c client.Client, cfg workerkit.Config, model *testmodel.Server, progress func(string)) (*prefixResult, error) {
	stop, err := startSlidingWorker(ctx, c, cfg)
	if err != nil {
		return nil, err
	}
	defer stop()
	res := &prefixResult{BudgetKB: float64(prefixAgent("x").ContextBudgetBytes()) / 1000}
	if res.After, err = prefixConversation(ctx, c, agentQueue, "after", model, progress); err != nil {
		return nil, err
	}
	if res.Before, err = prefixConversation(ctx, c, prefixBeforeQ, "before", model, progress); err != nil {
		return nil, err
	}
	return res, nil
}

func prefixAgent(side string) contract.AgentSpec {
	return contract.AgentSpec{Name: "prefix-" + side, Model: "test/echo", ContextTokens: prefixContext, MaxTokens: 200,
		Instructions: "You are the cache-stable bench's agent (" + side + "). Answer briefly."}
}

// prefixConversation runs one side's conversation and reads what the test
// model received for it.
func prefixConversation(ctx context.Context, c client.Client, queue, side string, model *testmodel.Server, progress func(string)) (prefixSide, error) {
	began := time.Now()
	out := prefixSide{Name: side}
	id := fmt.Sprintf("bench-prefix-%s-%d", side, time.Now().UnixNano())
	args := contract.StartArgs{Agent: prefixAgent(side), IdleTimeout: "1h"}
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, contract.WorkflowType, args); err != nil {
		return out, err
	}
	defer func() { _ = c.TerminateWorkflow(context.Background(), id, "", "bench done") }()
	first := len(model.Calls())
	for turn := 1; turn <= prefixTurns; turn++ {
		text := fmt.Sprintf("turn %d: ", turn)
		text += strings.Repeat("lorem ipsum ", (prefixInputBytes-len(text))/12)
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: contract.UpdateAsk,
			Args: []any{contract.TaskIO{Message: contract.TextParts(text)}}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err != nil {
			return out, fmt.Errorf("%s turn %d: %w", side, turn, err)
		}
		if err := h.Get(ctx, nil); err != nil {
			return out, fmt.Errorf("%s turn %d: %w", side, turn, err)
		}
	}
	var bodies [][]byte
	var firsts []string
	for _, call := range model.Calls()[first:] {
		if len(call.Messages) == 0 || !strings.Contains(call.Messages[0].Content, "bench's agent ("+side+")") {
			continue
		}
		bodies = append(bodies, call.Raw)
		first := ""
		if len(call.Messages) > 1 {
			first = call.Messages[1].Content
		}
		firsts = append(firsts, first)
	}
	if len(bodies) != prefixTurns {
		return out, fmt.Errorf("%s: the test model received %d requests of the conversation, want %d", side, len(bodies), prefixTurns)
	}
	for i, b := range bodies {
		shared := 0
		if i > 0 {
			shared = commonPrefix(bodies[i-1], b)
			if firsts[i] != firsts[i-1] {
				out.Moves++
			}
		}
		out.Shares = append(out.Shares, float64(shared)/float64(len(b)))
		out.Requests = append(out.Requests, len(b))
	}
	out.HistoryKB = float64(prefixTurns*2*(prefixInputBytes+150)) / 1000 // about: input and echo entries as JSON
	out.Elapsed = time.Since(began)
	progress(fmt.Sprintf("prefix (%s): %d turns in %s, mean shared prefix over turns %d-%d: %.1f%%", side, prefixTurns,
		out.Elapsed.Round(time.Second), prefixFrom, prefixTurns, 100*out.mean(prefixFrom, prefixTurns)))
	return out, nil
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// startSlidingWorker runs AgentTask on prefixBeforeQ with the window as it
// was before cache-stable requests (activities.Activities.SlideWindow).
func startSlidingWorker(ctx context.Context, c client.Client, cfg workerkit.Config) (func(), error) {
	store, err := transcript.Open(ctx, cfg.TranscriptURL)
	if err != nil {
		return nil, err
	}
	tr := workerkit.TranscriptAdapter{Store: store}
	acts := &activities.Activities{Models: llm.NewRouter(cfg.Models), Transcript: tr, SlideWindow: true}
	w := sdkworker.New(c, prefixBeforeQ, sdkworker.Options{})
	wf := &workflows.Workflows{Transcript: tr}
	w.RegisterWorkflowWithOptions(wf.AgentTask, workflow.RegisterOptions{Name: contract.WorkflowType})
	w.RegisterActivityWithOptions(acts.ModelTurn, activity.RegisterOptions{Name: activities.ModelTurnName})
	w.RegisterActivityWithOptions(acts.WriteEntries, activity.RegisterOptions{Name: activities.WriteEntriesName})
	if err := w.Start(); err != nil {
		_ = store.Close()
		return nil, err
	}
	return func() { w.Stop(); _ = store.Close() }, nil
}

// printPrefix is the report's section.
func (r *report) printPrefix(p func(string, ...any)) []check {
	x := r.prefix
	if x == nil {
		return []check{{"shared prefix of requests", "not measured", false}}
	}
	p("Cache-stable requests: one conversation of %d turns (~%d-byte inputs, test/echo, contextTokens %d: a window of %.1f KB),", prefixTurns, prefixInputBytes, prefixContext, x.BudgetKB)
	p("   each request's bytes shared from its start with the previous request, as the test model received them")
	p("")
	p("   | window                                | mean shared, turns %d-%d | min   | window start moved | took |", prefixFrom, prefixTurns)
	p("   |---------------------------------------|---------------------------|-------|--------------------|------|")
	for _, s := range []struct {
		label string
		side  prefixSide
	}{{"fixed start, moved by blocks (shipped)", x.After}, {"longest suffix, one entry a turn (before)", x.Before}} {
		minShare := 1.0
		for t := prefixFrom; t <= prefixTurns; t++ {
			minShare = min(minShare, s.side.Shares[t-1])
		}
		p("   | %-37s | %24.1f%% | %4.1f%% | %18d | %4s |", s.label, 100*s.side.mean(prefixFrom, prefixTurns), 100*minShare, s.side.Moves, s.side.Elapsed.Round(time.Second))
	}
	last := x.After.Requests[len(x.After.Requests)-1]
	p("")
	p("   the last request: %d bytes (shipped), %d (before)", last, x.Before.Requests[len(x.Before.Requests)-1])
	p("")
	mean := x.After.mean(prefixFrom, prefixTurns)
	return []check{
		{fmt.Sprintf("the window moved at least twice in %d turns (the history outgrew it)", prefixTurns), fmt.Sprintf("%d moves", x.After.Moves), x.After.Moves >= 2},
		{fmt.Sprintf("mean shared prefix, turns %d-%d >= %.0f%%", prefixFrom, prefixTurns, 100*minPrefixShare), fmt.Sprintf("%.1f%% (before: %.1f%%)", 100*mean, 100*x.Before.mean(prefixFrom, prefixTurns)), mean >= minPrefixShare},
	}
}
