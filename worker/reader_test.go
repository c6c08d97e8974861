package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/activities"
	"github.com/agenttask/agenttask/schema"
	"github.com/agenttask/agenttask/workflows"
)

// slowReader is a store whose reads take delay (or fail with err) and are counted.
type slowReader struct {
	delay time.Duration
	err   atomic.Pointer[error]
	reads atomic.Int32
	// ctxErr is what the last read's context said when it finished.
	ctxErr atomic.Pointer[error]
}

func (s *slowReader) Read(ctx context.Context, k activities.TranscriptKey, from, to int) ([]schema.Message, error) {
	s.reads.Add(1)
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		err := ctx.Err()
		s.ctxErr.Store(&err)
		return nil, err
	}
	if e := s.err.Load(); e != nil {
		return nil, *e
	}
	out := make([]schema.Message, 0, to-from)
	for p := from; p < to; p++ {
		out = append(out, schema.Message{Type: schema.TypeOutput, TaskIO: schema.TaskIO{Message: []schema.ContentPart{schema.TextPart(fmt.Sprintf("%s-%d", k.TaskID, p))}}})
	}
	return out, nil
}

func textsOf(ms []schema.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, *m.Message[0].Text)
	}
	return out
}

var testKey = activities.TranscriptKey{TaskID: "t", FirstRunID: "r"}

// A slow store: the first read gives up after the bound with
// ErrTranscriptLoading, the load goes on with its own context, and the
// retried read is served from memory without another store read.
func TestQueryReaderBoundsTheWaitAndFillsTheCache(t *testing.T) {
	store := &slowReader{delay: 600 * time.Millisecond}
	r := newQueryReader(store, 50*time.Millisecond, 5*time.Second, time.Minute)

	// The query's own context is short: the load must not use it.
	qctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := r.Read(qctx, testKey, 0, 3)
	took := time.Since(start)
	require.ErrorIs(t, err, workflows.ErrTranscriptLoading)
	require.Less(t, took, 300*time.Millisecond, "the read waits at most the bound")

	// Not yet loaded: still loading, and no second store read.
	_, err = r.Read(context.Background(), testKey, 0, 3)
	require.ErrorIs(t, err, workflows.ErrTranscriptLoading)
	require.Equal(t, int32(1), store.reads.Load(), "a retried read joins the running load")

	time.Sleep(700 * time.Millisecond)
	require.Nil(t, store.ctxErr.Load(), "the load was not canceled with the query")
	start = time.Now()
	ms, err := r.Read(context.Background(), testKey, 0, 3)
	require.NoError(t, err)
	require.Less(t, time.Since(start), 20*time.Millisecond, "served from memory")
	require.Equal(t, []string{"t-0", "t-1", "t-2"}, textsOf(ms))
	require.Equal(t, int32(1), store.reads.Load())

	// Entries are cached one by one: a sub-range is served too.
	ms, err = r.Read(context.Background(), testKey, 1, 2)
	require.NoError(t, err)
	require.Equal(t, []string{"t-1"}, textsOf(ms))
	require.Equal(t, int32(1), store.reads.Load())

	// Another transcript is another entry.
	other := activities.TranscriptKey{TaskID: "u", FirstRunID: "r"}
	_, err = r.Read(context.Background(), other, 1, 2)
	require.ErrorIs(t, err, workflows.ErrTranscriptLoading)
	require.Equal(t, int32(2), store.reads.Load())
}

// Concurrent reads of one range share one load.
func TestQueryReaderCoalescesLoads(t *testing.T) {
	store := &slowReader{delay: 200 * time.Millisecond}
	r := newQueryReader(store, time.Second, 5*time.Second, time.Minute)
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
	r := newQueryReader(store, 300*time.Millisecond, 5*time.Second, time.Minute)
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
	store := &slowReader{delay: time.Hour}
	r := newQueryReader(store, 10*time.Millisecond, 100*time.Millisecond, time.Minute)
	_, err := r.Read(context.Background(), testKey, 0, 1)
	require.ErrorIs(t, err, workflows.ErrTranscriptLoading)
	time.Sleep(200 * time.Millisecond)
	require.NotNil(t, store.ctxErr.Load(), "the load was ended by its timeout")
	// The failed load was forgotten: a new read starts a new load.
	_, err = r.Read(context.Background(), testKey, 0, 1)
	require.ErrorIs(t, err, workflows.ErrTranscriptLoading)
	require.Equal(t, int32(2), store.reads.Load())
}
