package workerkit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/workflows"
)

// slowReader is a store whose reads take delay, or wait for gate when it is
// set, (or fail with err) and are counted.
type slowReader struct {
	delay time.Duration
	gate  chan struct{}
	err   atomic.Pointer[error]
	reads atomic.Int32
	// ctxErr is what the last read's context said when it finished.
	ctxErr atomic.Pointer[error]
	// finished counts reads that returned.
	finished atomic.Int32
}

func (s *slowReader) Read(ctx context.Context, k activities.TranscriptKey, from, to int) ([]contract.Message, error) {
	s.reads.Add(1)
	defer s.finished.Add(1)
	release := s.gate
	if release == nil {
		release = make(chan struct{})
		t := time.AfterFunc(s.delay, func() { close(release) })
		defer t.Stop()
	}
	select {
	case <-release:
	case <-ctx.Done():
		err := ctx.Err()
		s.ctxErr.Store(&err)
		return nil, err
	}
	if e := s.err.Load(); e != nil {
		return nil, *e
	}
	out := make([]contract.Message, 0, to-from)
	for p := from; p < to; p++ {
		out = append(out, contract.Message{Type: contract.TypeOutput, TaskIO: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(fmt.Sprintf("%s-%d", k.TaskID, p))}}})
	}
	return out, nil
}

// within polls cond until it holds; the deadline only ends a broken test.
func within(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

func textsOf(ms []contract.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, *m.Message[0].Text)
	}
	return out
}

var testKey = activities.TranscriptKey{TaskID: "t", FirstRunID: "r"}

// A slow store: the first read gives up after the bound with
// ErrTranscriptLoading while the load goes on with its own context; a
// retry once the bound has passed answers at once (it joins the load and
// holds the workflow's lock no longer); and once the load is done, reads
// are served from memory without another store read.
func TestQueryReaderBoundsTheWaitAndFillsTheCache(t *testing.T) {
	store := &slowReader{gate: make(chan struct{})}
	r := newQueryReader(store, 50*time.Millisecond, 5*time.Second, time.Minute)

	// The query's own context ends with the query: the load must not use it.
	qctx, cancel := context.WithCancel(context.Background())
	_, err := r.Read(qctx, testKey, 0, 3)
	cancel()
	require.ErrorIs(t, err, workflows.ErrTranscriptLoading)
	require.Contains(t, err.Error(), "waited 50ms")
	require.Zero(t, store.finished.Load(), "the read gave up while the load was running")

	// The bound has passed: the retry joins the load and does not wait again.
	_, err = r.Read(context.Background(), testKey, 0, 3)
	require.ErrorIs(t, err, workflows.ErrTranscriptLoading)
	require.Contains(t, err.Error(), "loading for")
	require.Equal(t, int32(1), store.reads.Load(), "a retried read joins the running load")

	close(store.gate)
	var ms []contract.Message
	within(t, "the load fills the cache", func() bool {
		ms, err = r.Read(context.Background(), testKey, 0, 3)
		return err == nil
	})
	require.Nil(t, store.ctxErr.Load(), "the load was not canceled with the query")
	require.Equal(t, []string{"t-0", "t-1", "t-2"}, textsOf(ms))
	ms, err = r.Read(context.Background(), testKey, 0, 3)
	require.NoError(t, err)
	require.Equal(t, []string{"t-0", "t-1", "t-2"}, textsOf(ms))
	require.Equal(t, int32(1), store.reads.Load(), "served from memory")

	// Entries are cached one by one: a sub-range is served too.
	ms, err = r.Read(context.Background(), testKey, 1, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"t-1"}, textsOf(ms))
	require.Equal(t, int32(1), store.reads.Load())

	// Another transcript is another entry.
	store.gate = make(chan struct{})
	defer close(store.gate)
	other := activities.TranscriptKey{TaskID: "u", FirstRunID: "r"}
	_, err = r.Read(context.Background(), other, 1, 2)
	require.ErrorIs(t, err, workflows.ErrTranscriptLoading)
	require.Equal(t, int32(2), store.reads.Load())
}

// Concurrent reads of one range share one load.
func TestQueryReaderCoalescesLoads(t *testing.T) {
	store := &slowReader{delay: 200 * time.Millisecond}
	r := newQueryReader(store, time.Minute, time.Minute, time.Minute) // bounds no loaded machine reaches
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms, err := r.Read(context.Background(), testKey, 0, 64)
			if err == nil && len(ms) != 64 {
				err = fmt.Errorf("%d entries", len(ms))
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int32(1), store.reads.Load(), "one store read for 20 concurrent reads")
}

// A fast store answers within the bound; a failed load is reported and
// forgotten, so the next read tries again.
func TestQueryReaderFastStoreAndFailures(t *testing.T) {
	store := &slowReader{delay: 5 * time.Millisecond}
	r := newQueryReader(store, time.Minute, time.Minute, time.Minute)
	ms, err := r.Read(context.Background(), testKey, 0, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"t-0", "t-1"}, textsOf(ms))

	boom := errors.New("bucket gone")
	store.err.Store(&boom)
	_, err = r.Read(context.Background(), testKey, 2, 4)
	require.ErrorIs(t, err, boom)
	require.NotErrorIs(t, err, workflows.ErrTranscriptLoading)
	store.err.Store(nil)
	ms, err = r.Read(context.Background(), testKey, 2, 4)
	require.NoError(t, err)
	require.Equal(t, []string{"t-2", "t-3"}, textsOf(ms))
	require.Equal(t, int32(3), store.reads.Load())
}

// The load has a timeout of its own: a store that never answers ends it.
func TestQueryReaderLoadTimesOut(t *testing.T) {
	store := &slowReader{gate: make(chan struct{})}
	defer close(store.gate)
	r := newQueryReader(store, 10*time.Millisecond, 100*time.Millisecond, time.Minute)
	_, err := r.Read(context.Background(), testKey, 0, 1)
	require.ErrorIs(t, err, workflows.ErrTranscriptLoading)
	within(t, "the load is ended by its timeout", func() bool { return store.ctxErr.Load() != nil })
	require.ErrorIs(t, *store.ctxErr.Load(), context.DeadlineExceeded)
	// The failed load is forgotten: a new read starts a new load.
	within(t, "a new load", func() bool {
		_, err = r.Read(context.Background(), testKey, 0, 1)
		return store.reads.Load() == 2
	})
	require.ErrorIs(t, err, workflows.ErrTranscriptLoading)
}
