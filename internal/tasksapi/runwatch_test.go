package tasksapi

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
