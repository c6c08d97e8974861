package tasksapi

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/internal/definitions"
)

// countingRuns answers runWatch's question and counts each one per run.
type countingRuns struct {
	mu    sync.Mutex
	calls map[string]int
	ended map[string]bool
}

func (c *countingRuns) isEnded(_ context.Context, id string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[id]++
	return c.ended[id], nil
}

func (c *countingRuns) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[id]
}

// N streams of one run cost one describe per interval, not N: the watch
// is shared. All of them learn the run's end from that one describe, and
// once the last stream has gone nothing more is asked.
func TestStreamsOfARunShareOneDescribePerInterval(t *testing.T) {
	runs := &countingRuns{calls: map[string]int{}, ended: map[string]bool{}}
	const every = 50 * time.Millisecond
	w := newRunWatch(runs.isEnded, every)

	const streams = 20
	var chans []<-chan struct{}
	var leaves []func()
	for range streams {
		ch, leave := w.watch("run-a")
		chans, leaves = append(chans, ch), append(leaves, leave)
	}
	_, leaveB := w.watch("run-b") // another run: its own poll
	start := time.Now()
	time.Sleep(10 * every)
	elapsed := time.Since(start)
	intervals := int(elapsed / every)
	got := runs.count("run-a")
	t.Logf("%d streams, %s: %d describes of their run (%d intervals)", streams, elapsed.Round(time.Millisecond), got, intervals)
	require.GreaterOrEqual(t, got, 1, "the run is asked about")
	require.LessOrEqual(t, got, intervals+1, "at most one describe per interval for all %d streams", streams)
	require.GreaterOrEqual(t, runs.count("run-b"), 1, "another run has its own poll")

	runs.mu.Lock()
	runs.ended["run-a"] = true
	runs.mu.Unlock()
	for i, ch := range chans {
		select {
		case <-ch:
		case <-time.After(5 * every):
			t.Fatalf("stream %d did not learn the run's end", i)
		}
	}
	for _, leave := range leaves {
		leave()
		leave() // twice is once
	}
	leaveB()
	time.Sleep(every / 2) // a describe already asked comes back
	after := runs.count("run-a") + runs.count("run-b")
	time.Sleep(4 * every)
	require.Equal(t, after, runs.count("run-a")+runs.count("run-b"), "nothing is asked once no stream waits")

	// A stream that comes after the end starts a poll of its own.
	ch, leave := w.watch("run-a")
	defer leave()
	select {
	case <-ch:
	case <-time.After(5 * every):
		t.Fatal("a later stream did not learn the run's end")
	}
}

// Leaving before the end stops the poll; the map holds no run nobody waits on.
func TestARunNobodyWatchesIsNotPolled(t *testing.T) {
	var calls atomic.Int32
	w := newRunWatch(func(context.Context, string) (bool, error) { calls.Add(1); return false, nil }, 20*time.Millisecond)
	_, leave := w.watch("run-c")
	leave()
	time.Sleep(100 * time.Millisecond)
	require.Zero(t, calls.Load())
	w.mu.Lock()
	defer w.mu.Unlock()
	require.Empty(t, w.runs)
}

// describingClient is a Temporal client whose DescribeWorkflowExecution
// counts its calls and answers status.
type describingClient struct {
	client.Client
	calls  atomic.Int32
	status atomic.Int32 // enumspb.WorkflowExecutionStatus
}

func (c *describingClient) DescribeWorkflowExecution(context.Context, string, string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	c.calls.Add(1)
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Status: enumspb.WorkflowExecutionStatus(c.status.Load())}}, nil
}

// The server's streams go through one watch per Temporal client: 10
// streams of a run on two servers of the same client, for about two
// intervals (closedCheck), cost at most one describe per interval; a
// completed run ends them all.
func TestServersShareTheirClientsWatch(t *testing.T) {
	c := &describingClient{}
	c.status.Store(int32(enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING))
	a := &server{cfg: Config{Store: &definitions.Store{C: c}}}
	b := &server{cfg: Config{Store: &definitions.Store{C: c}}}
	var ends []<-chan struct{}
	for i := range 10 {
		s := a
		if i%2 == 1 {
			s = b
		}
		ch, leave := s.watchRun("run-shared")
		defer leave()
		ends = append(ends, ch)
	}
	time.Sleep(2*closedCheck + closedCheck/2)
	require.LessOrEqual(t, int(c.calls.Load()), 2, "10 streams, 2 intervals")
	require.GreaterOrEqual(t, int(c.calls.Load()), 1)
	c.status.Store(int32(enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED))
	for _, ch := range ends {
		select {
		case <-ch:
		case <-time.After(2 * closedCheck):
			t.Fatal("a stream did not learn the run's end")
		}
	}
	require.LessOrEqual(t, int(c.calls.Load()), 3)
}
