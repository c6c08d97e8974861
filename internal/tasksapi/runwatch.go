package tasksapi

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/starter"
)

// A run's end is known to Temporal only (the worker's events end turns,
// not runs), so /events asks Temporal. It asks once per run, not once per
// connection: the API process keeps one runWatch, which describes each run
// that has open streams every closedCheck and tells all of them when it has
// ended. N connections to one run cost one DescribeWorkflowExecution per
// interval, and none once the last connection has gone.

// runWatch polls the runs some streams wait on.
type runWatch struct {
	// ended asks Temporal once whether the run is no longer running.
	ended func(ctx context.Context, id string) (bool, error)
	every time.Duration

	mu   sync.Mutex
	runs map[string]*watchedRun
}

// watchedRun is one run's poll and the streams waiting on it.
type watchedRun struct {
	waiting int           // streams that watch it
	done    chan struct{} // closed once the run is seen ended
	stop    context.CancelFunc
}

func newRunWatch(ended func(ctx context.Context, id string) (bool, error), every time.Duration) *runWatch {
	return &runWatch{ended: ended, every: every, runs: map[string]*watchedRun{}}
}

// watch returns a channel closed once run id is seen ended, and the
// function a stream calls when it stops waiting (the poll ends with the
// last one).
func (w *runWatch) watch(id string) (<-chan struct{}, func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.runs[id]
	if r == nil {
		ctx, stop := context.WithCancel(context.Background())
		r = &watchedRun{done: make(chan struct{}), stop: stop}
		w.runs[id] = r
		go w.poll(ctx, id, r)
	}
	r.waiting++
	var once sync.Once
	return r.done, func() { once.Do(func() { w.leave(id, r) }) }
}

func (w *runWatch) leave(id string, r *watchedRun) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r.waiting--; r.waiting == 0 {
		r.stop()
		if w.runs[id] == r {
			delete(w.runs, id)
		}
	}
}

// poll describes the run every interval until it has ended or no stream
// waits on it. A run seen ended is forgotten: a stream that comes later
// starts a poll of its own, which sees the end at its first describe.
func (w *runWatch) poll(ctx context.Context, id string, r *watchedRun) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ctx.Err() != nil { // the last stream left as the tick came
			return
		}
		cctx, cancel := context.WithTimeout(ctx, w.every+5*time.Second)
		ended, err := w.ended(cctx, id)
		cancel()
		if err == nil && ended {
			w.mu.Lock()
			if w.runs[id] == r {
				delete(w.runs, id)
			}
			w.mu.Unlock()
			close(r.done)
			return
		}
	}
}

// describeEnded is runWatch's question to Temporal (starter.Client.Ended).
func describeEnded(c client.Client) func(context.Context, string) (bool, error) {
	return starter.New(c, "").Ended
}

// runWatches holds the one runWatch of each Temporal client this process
// serves from (a process normally has one): kept beside the server rather
// than in it, so every server of the client shares it.
var runWatches sync.Map // client.Client → *runWatch

// watchRun is s's shared watch of run id (runWatch.watch).
func (s *server) watchRun(id string) (<-chan struct{}, func()) {
	c := s.cfg.Store.C
	w, ok := runWatches.Load(c)
	if !ok {
		w, _ = runWatches.LoadOrStore(c, newRunWatch(describeEnded(c), closedCheck))
	}
	return w.(*runWatch).watch(id)
}
