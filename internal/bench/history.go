package main

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/agenttask/agenttask/contract"
)

// Per-turn history accounting. Turn k is everything the history gained from
// the k-th `input` signal up to the next signal: the events between the k-th
// and (k+1)-th WorkflowExecutionSignaled events (the `close` sent after the
// last turn ends the last one). A turn's bytes are the sum of proto.Size of
// its events. When the task continues as new, a chain of runs is read as
// one sequence, so the turn that continues also counts the new run's first
// events.

// chainEvent is one event of a chain of runs.
type chainEvent struct {
	*historypb.HistoryEvent
	run int // 1-based index of the run in the chain
}

// turnSpan is one turn's events.
type turnSpan struct {
	events []chainEvent
}

func (t turnSpan) run() int { return t.events[0].run }

// crossesRun says whether the turn continued as new.
func (t turnSpan) crossesRun() bool { return t.events[len(t.events)-1].run != t.events[0].run }

func (t turnSpan) bytes() int {
	n := 0
	for _, e := range t.events {
		n += proto.Size(e.HistoryEvent)
	}
	return n
}

// readChain reads every run of id from runID on, following continue-as-new.
func readChain(ctx context.Context, c client.Client, id, runID string) ([]chainEvent, []string, error) {
	var all []chainEvent
	var runs []string
	for runID != "" {
		runs = append(runs, runID)
		next := ""
		it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return nil, nil, fmt.Errorf("history of %s/%s: %w", id, runID, err)
			}
			all = append(all, chainEvent{e, len(runs)})
			if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
				next = e.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
			}
		}
		runID = next
	}
	return all, runs, nil
}

// splitTurns cuts a chain's events into turns, one per signal named input.
func splitTurns(events []chainEvent, input string) []turnSpan {
	var turns []turnSpan
	cur := -1 // index in turns of the open turn; -1 before the first input
	for _, e := range events {
		if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED {
			if e.GetWorkflowExecutionSignaledEventAttributes().GetSignalName() == input {
				turns = append(turns, turnSpan{})
				cur = len(turns) - 1
			} else {
				cur = -1 // another signal (close) ends the open turn
			}
		}
		if cur >= 0 {
			turns[cur].events = append(turns[cur].events, e)
		}
	}
	return turns
}

// serverCount is what DescribeWorkflowExecution reports of the current run.
type serverCount struct {
	runID  string
	length int64
	size   int64
}

func describe(ctx context.Context, c client.Client, id string) (serverCount, error) {
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return serverCount{}, err
	}
	info := d.GetWorkflowExecutionInfo()
	return serverCount{runID: info.GetExecution().GetRunId(), length: info.GetHistoryLength(), size: info.GetHistorySizeBytes()}, nil
}

// turnStat is one turn of the history measurement.
type turnStat struct {
	Turn    int
	Run     int
	Events  int
	Bytes   int // sum of proto.Size
	Crosses bool
	// From the server's history_length and history_size_bytes, read after
	// the turn and after the one before; valid only within one run.
	ServerOK     bool
	ServerEvents int64
	ServerBytes  int64
	ByType       map[enumspb.EventType]int // bytes per event type
	Types        []string                  // the turn's events, in order
}

// historyResult is the whole history measurement.
type historyResult struct {
	ID       string
	Turns    []turnStat // index k-1 is turn k
	Runs     int
	CANTurn  int // the turn that continued as new; 0 if none
	RunSizes []runSize
	Elapsed  time.Duration
}

// runSize compares, per run, the sum of proto.Size of its events with the
// history_size_bytes the server reports.
type runSize struct {
	Events     int
	ProtoBytes int
	Server     int64
}

// measureHistory runs one conversation of n turns on queue and accounts for
// the history each turn adds.
func measureHistory(ctx context.Context, c client.Client, queue string, n int, progress func(string)) (*historyResult, error) {
	start := time.Now()
	id := fmt.Sprintf("bench-history-%d", start.UnixNano())
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, contract.WorkflowType,
		map[string]any{"agent": benchAgent(), "idleTimeout": "1h"})
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", id, err)
	}
	counts := make([]serverCount, n+1) // counts[k]: after turn k
	for k := 1; k <= n; k++ {
		if _, err := agentTurn(ctx, c, id, k, 2*(k-1)); err != nil {
			return nil, err
		}
		if counts[k], err = describe(ctx, c, id); err != nil {
			return nil, fmt.Errorf("describe after turn %d: %w", k, err)
		}
		if k%100 == 0 {
			progress(fmt.Sprintf("history: %d/%d turns (%s)", k, n, time.Since(start).Round(time.Second)))
		}
	}
	if err := c.SignalWorkflow(ctx, id, "", contract.SignalClose, nil); err != nil {
		return nil, fmt.Errorf("close: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var res contract.Result
	if err := c.GetWorkflow(wctx, id, "").Get(wctx, &res); err != nil {
		return nil, fmt.Errorf("waiting for %s to complete: %w", id, err)
	}
	if res.Turns != n {
		return nil, fmt.Errorf("%s completed after %d turns, want %d", id, res.Turns, n)
	}

	events, runIDs, err := readChain(ctx, c, id, run.GetRunID())
	if err != nil {
		return nil, err
	}
	spans := splitTurns(events, contract.SignalInput)
	if len(spans) != n {
		return nil, fmt.Errorf("found %d input signals in the history of %s, want %d", len(spans), id, n)
	}
	hr := &historyResult{ID: id, Runs: len(runIDs), Elapsed: time.Since(start)}
	for i, sp := range spans {
		ts := turnStat{Turn: i + 1, Run: sp.run(), Events: len(sp.events), Bytes: sp.bytes(), Crosses: sp.crossesRun(),
			ByType: map[enumspb.EventType]int{}}
		for _, e := range sp.events {
			ts.ByType[e.GetEventType()] += proto.Size(e.HistoryEvent)
			ts.Types = append(ts.Types, shortType(e.GetEventType()))
		}
		if ts.Crosses && hr.CANTurn == 0 {
			hr.CANTurn = ts.Turn
		}
		if k := i + 1; k >= 2 && counts[k].runID == counts[k-1].runID && !ts.Crosses {
			ts.ServerOK = true
			ts.ServerEvents = counts[k].length - counts[k-1].length
			ts.ServerBytes = counts[k].size - counts[k-1].size
		}
		hr.Turns = append(hr.Turns, ts)
	}
	for i, rid := range runIDs {
		rs := runSize{}
		for _, e := range events {
			if e.run == i+1 {
				rs.Events++
				rs.ProtoBytes += proto.Size(e.HistoryEvent)
			}
		}
		d, err := c.DescribeWorkflowExecution(ctx, id, rid)
		if err != nil {
			return nil, fmt.Errorf("describe run %d: %w", i+1, err)
		}
		rs.Server = d.GetWorkflowExecutionInfo().GetHistorySizeBytes()
		hr.RunSizes = append(hr.RunSizes, rs)
	}
	return hr, nil
}

// benchAgent is the agent of every bench task: the zero-latency echo model.
func benchAgent() map[string]any {
	return map[string]any{"name": "bench", "model": "test/echo", "instructions": "Answer briefly."}
}

// windowStats summarises turns [from, to] (1-based, inclusive).
type windowStats struct {
	From, To             int
	Runs                 map[int]bool
	EventsMean           float64
	EventsMin, EventsMax int
	BytesMean            float64
	ServerBytesMean      float64 // over turns with ServerOK
	ServerTurns          int
	ServerEventsMatch    bool // history_length delta == counted events on every such turn
	ByTypeMean           map[enumspb.EventType]float64
}

func (h *historyResult) window(from, to int) windowStats {
	w := windowStats{From: from, To: to, Runs: map[int]bool{}, EventsMin: 1 << 30, ServerEventsMatch: true,
		ByTypeMean: map[enumspb.EventType]float64{}}
	n := 0
	for _, t := range h.Turns[from-1 : to] {
		n++
		w.Runs[t.Run] = true
		w.EventsMean += float64(t.Events)
		w.EventsMin, w.EventsMax = min(w.EventsMin, t.Events), max(w.EventsMax, t.Events)
		w.BytesMean += float64(t.Bytes)
		for typ, b := range t.ByType {
			w.ByTypeMean[typ] += float64(b)
		}
		if t.ServerOK {
			w.ServerTurns++
			w.ServerBytesMean += float64(t.ServerBytes)
			if t.ServerEvents != int64(t.Events) {
				w.ServerEventsMatch = false
			}
		}
	}
	w.EventsMean /= float64(n)
	w.BytesMean /= float64(n)
	for typ := range w.ByTypeMean {
		w.ByTypeMean[typ] /= float64(n)
	}
	if w.ServerTurns > 0 {
		w.ServerBytesMean /= float64(w.ServerTurns)
	}
	return w
}
