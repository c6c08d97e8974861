package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/workerkit"
)

// Memory and scale, on real worker processes
// (AGENT_WORKER_BIN, the bin/worker that ships), each on a task queue of
// its own, with the load's keep-nothing echo model (startLoadModel) and
// transcripts in a temporary file:// folder:
//
//   - Idle memory: one fresh worker process; N AgentTask conversations
//     each answer one turn (the `ask` update, 50 conversations at a time)
//     and then sit idle waiting for input. The worker's RSS (median of a
//     few samples 1 s apart) is read once it polls and has served idleWarm
//     conversations of warm-up, and again after ~5 s of quiet; (after - before) / N is the memory an idle conversation costs.
//     Twice: with the sticky cache holding every conversation, and with
//     the smallest cache the binary takes (1: AGENT_WORKER_STICKY_CACHE
//     refuses 0, the SDK's "no sticky execution"), where every
//     conversation but one is evicted and replays its history at its next
//     workflow task.
//   - Two workers: the load of load.go (M conversations × K turns at
//     once, runLoadSide) against one worker process, then against two on
//     one queue, on a fresh queue each.

// scaleFlags are the phase's flags (main.go registers them).
var scaleFlags struct {
	idle  int // -idle-conversations: 0 skips the idle memory
	convs int // -scale-conversations: 0 skips the two workers
	turns int // -scale-turns
}

const (
	// idleQuiet is how long the worker is left alone before its RSS after.
	idleQuiet = 5 * time.Second
	// rssSamples are taken 1 s apart; the median is the figure.
	rssSamples = 5
	// stickyOff is the smallest sticky cache AGENT_WORKER_STICKY_CACHE takes.
	stickyOff = 1
	// stickyOnMin: the cache on holds every idle conversation (the SDK's
	// default, 10,000, or N and the warm-up's when more).
	stickyOnMin = 10000
	// idleWarm conversations answer a turn before the RSS before.
	idleWarm = 100
	// workerStopTimeout: the workers are stopped with nothing running.
	workerStopTimeout = "2s"
)

// scaleEnv is what the phase needs from the bench.
type scaleEnv struct {
	addr   string           // the server's frontend
	server *os.Process      // agentdev server, for its RSS and CPU
	tuning workerkit.Tuning // AGENT_WORKER_*, as the bench read them
}

// scaleResult is the whole phase.
type scaleResult struct {
	WorkerBin       string
	Tuning          workerkit.Tuning // the workers' (loadTuning's defaults where unset)
	BenchSet        map[string]bool  // the fields loadTuning filled
	IdleN           int
	IdleOn, IdleOff *idleRun
	ConvN, Turns    int
	One, Two        *scaleSide
	Elapsed         time.Duration
}

// idleRun is one idle-memory run, on a fresh worker process.
type idleRun struct {
	Name             string
	StickyCache      int
	N                int
	Answered, Errors int
	FirstErrs        []string
	// The worker's RSS before the conversations (median), its peak while
	// they started (VmHWM, reset first; PeakOK false when the reset was
	// refused) and its RSS after the quiet (median).
	RSSBefore, RSSPeak, RSSAfter uint64
	PeakOK                       bool
	ServerRSSBefore              uint64
	ServerRSSAfter               uint64
	Start                        time.Duration // starting N, each through its first answer
	CPU, ServerCPU               time.Duration // during the start
}

// perConversation is the RSS an idle conversation adds, in bytes.
func (r *idleRun) perConversation() float64 {
	if r.Answered == 0 {
		return 0
	}
	return (float64(r.RSSAfter) - float64(r.RSSBefore)) / float64(r.Answered)
}

// scaleSide is the load against W worker processes.
type scaleSide struct {
	Workers int
	Queue   string
	*loadSide
	// The worker processes': RSS once polling, peak during the side (VmHWM,
	// reset first), and CPU time during the side, summed over them.
	WorkerRSSBefore, WorkerRSSPeak []uint64
	WorkerPeakOK                   bool
	WorkerCPU                      time.Duration
}

func measureScale(ctx context.Context, env scaleEnv, progress func(string)) (*scaleResult, error) {
	if scaleFlags.idle <= 0 && scaleFlags.convs <= 0 {
		return nil, nil
	}
	if scaleFlags.convs > 0 && scaleFlags.turns < 1 {
		return nil, fmt.Errorf("-scale-turns must be at least 1")
	}
	began := time.Now()
	res := &scaleResult{IdleN: scaleFlags.idle, ConvN: scaleFlags.convs, Turns: scaleFlags.turns}
	res.Tuning, res.BenchSet = loadTuning(env.tuning)
	bin, cleanup, err := workerBinary()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	res.WorkerBin = bin

	model := startLoadModel()
	defer model.Close()
	transcripts, err := os.MkdirTemp("", "agenttask-bench-scale-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(transcripts)
	dc, err := client.Dial(client.Options{HostPort: env.addr, Namespace: "default", Logger: quietLogger{}})
	if err != nil {
		return nil, err
	}
	defer dc.Close()
	wenv := workerEnvSpec{bin: bin, addr: env.addr, model: model.URL, transcripts: "file://" + filepath.ToSlash(transcripts), tuning: res.Tuning}
	stamp := began.UnixNano()

	if n := scaleFlags.idle; n > 0 {
		for _, run := range []struct {
			name  string
			cache int
			into  **idleRun
		}{{"sticky cache on", max(n+idleWarm, stickyOnMin), &res.IdleOn}, {"sticky cache off", stickyOff, &res.IdleOff}} {
			queue := fmt.Sprintf("bench-idle-%d-%d", run.cache, stamp)
			r, err := measureIdleMemory(ctx, dc, env, wenv, queue, run.name, run.cache, n, progress)
			if err != nil {
				return nil, err
			}
			*run.into = r
		}
	}
	if m := scaleFlags.convs; m > 0 {
		for _, side := range []struct {
			workers int
			into    **scaleSide
		}{{1, &res.One}, {2, &res.Two}} {
			queue := fmt.Sprintf("bench-scale-%dw-%d", side.workers, stamp)
			s, err := measureWorkers(ctx, dc, env, wenv, queue, side.workers, m, scaleFlags.turns, progress)
			if err != nil {
				return nil, err
			}
			*side.into = s
		}
	}
	res.Elapsed = time.Since(began)
	return res, nil
}

// measureIdleMemory is one idle-memory run on a fresh worker process.
func measureIdleMemory(ctx context.Context, c client.Client, env scaleEnv, wenv workerEnvSpec, queue, name string, cache, n int, progress func(string)) (*idleRun, error) {
	r := &idleRun{Name: name, StickyCache: cache, N: n}
	w, err := startWorkerProc(ctx, c, wenv, queue, cache)
	if err != nil {
		return nil, err
	}
	defer w.stop()
	pid := w.cmd.Process.Pid
	spec := agentLoadSpec(c, queue)

	// A warm-up first, not counted: what the process grows by once (its
	// heap's first growth, the SDK's and the HTTP client's pools) is not
	// the conversations'. Its conversations stay idle through the run.
	warm := make([]string, idleWarm)
	for i := range warm {
		warm[i] = fmt.Sprintf("%s-warm-%03d", queue, i)
	}
	defer terminateAll(c, warm)
	var warmErr atomic.Value
	parallel(len(warm), loadStartParallel, func(i int) {
		sctx, cancel := context.WithTimeout(ctx, loadTurnTimeout)
		defer cancel()
		err := spec.start(sctx, warm[i])
		if err == nil {
			err = spec.turn(sctx, warm[i], 1)
		}
		if err != nil {
			warmErr.Store(fmt.Errorf("warm-up conversation %s: %w", warm[i], err))
		}
	})
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err, _ := warmErr.Load().(error); err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second)
	r.RSSBefore, r.ServerRSSBefore = medianRSS(pid, 3), procStatus(env.server.Pid, "VmRSS")
	r.PeakOK = resetPeakRSS(pid)
	cpu0, scpu0 := cpuTime(pid), cpuTime(env.server.Pid)

	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%05d", queue, i)
	}
	defer terminateAll(c, ids)
	var mu sync.Mutex
	fail := func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		r.Errors++
		if len(r.FirstErrs) < 5 {
			r.FirstErrs = append(r.FirstErrs, what+": "+err.Error())
		}
	}
	progress(fmt.Sprintf("scale: idle memory, %s (AGENT_WORKER_STICKY_CACHE=%d): %d conversations answering one turn each", name, cache, n))
	var answered atomic.Int64
	stopProgress := every(10*time.Second, func(el time.Duration) {
		progress(fmt.Sprintf("scale: idle memory, %s: %d/%d answered (%s)", name, answered.Load(), n, el.Round(time.Second)))
	})
	t0 := time.Now()
	parallel(n, loadStartParallel, func(i int) {
		if ctx.Err() != nil || w.exited() {
			return
		}
		sctx, cancel := context.WithTimeout(ctx, loadTurnTimeout)
		defer cancel()
		if err := spec.start(sctx, ids[i]); err != nil {
			fail("start "+ids[i], err)
			return
		}
		// No readiness query: the update waits on the server for the
		// workflow's first task, and a query would replay the history of
		// a conversation the small cache evicted.
		if err := spec.turn(sctx, ids[i], 1); err != nil {
			fail(ids[i]+" turn 1", err)
			return
		}
		answered.Add(1)
	})
	r.Start = time.Since(t0)
	stopProgress()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if w.exited() {
		return nil, fmt.Errorf("the worker on %s exited: %s", queue, w.why())
	}
	r.CPU, r.ServerCPU = cpuTime(pid)-cpu0, cpuTime(env.server.Pid)-scpu0
	r.RSSPeak = procStatus(pid, "VmHWM")
	r.Answered = int(answered.Load())
	r.Errors = n - r.Answered // the failed, and any never tried
	time.Sleep(idleQuiet)
	r.RSSAfter, r.ServerRSSAfter = medianRSS(pid, rssSamples), procStatus(env.server.Pid, "VmRSS")
	progress(fmt.Sprintf("scale: idle memory, %s: %d answered in %s, %d errors; RSS %s -> %s (%.1f KiB a conversation)", name,
		r.Answered, r.Start.Round(time.Millisecond), r.Errors, mib(r.RSSBefore), mib(r.RSSAfter), r.perConversation()/1024))
	return r, nil
}

// measureWorkers runs the load against `workers` worker processes on queue.
func measureWorkers(ctx context.Context, c client.Client, env scaleEnv, wenv workerEnvSpec, queue string, workers, m, turns int, progress func(string)) (*scaleSide, error) {
	s := &scaleSide{Workers: workers, Queue: queue, WorkerPeakOK: true}
	var procs []*workerProc
	defer func() {
		for _, w := range procs {
			w.stop()
		}
	}()
	for range workers {
		w, err := startWorkerProc(ctx, c, wenv, queue, wenv.tuning.StickyCache)
		if err != nil {
			return nil, err
		}
		procs = append(procs, w)
	}
	time.Sleep(2 * time.Second)
	cpu0 := make([]time.Duration, workers)
	for i, w := range procs {
		pid := w.cmd.Process.Pid
		s.WorkerRSSBefore = append(s.WorkerRSSBefore, procStatus(pid, "VmRSS"))
		s.WorkerPeakOK = resetPeakRSS(pid) && s.WorkerPeakOK
		cpu0[i] = cpuTime(pid)
	}
	ids := make([]string, m)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%04d", queue, i)
	}
	spec := agentLoadSpec(c, queue)
	spec.name = fmt.Sprintf("scale: %d worker(s)", workers)
	ls, err := runLoadSide(ctx, c, env.server, spec, ids, turns, progress)
	if err != nil {
		return nil, err
	}
	s.loadSide = ls
	for i, w := range procs {
		pid := w.cmd.Process.Pid
		s.WorkerCPU += cpuTime(pid) - cpu0[i]
		s.WorkerRSSPeak = append(s.WorkerRSSPeak, procStatus(pid, "VmHWM"))
		if w.exited() {
			return nil, fmt.Errorf("a worker on %s exited during the load: %s", queue, w.why())
		}
	}
	return s, nil
}

// agentLoadSpec drives AgentTask conversations on queue as load.go's
// AgentTask side does: started with the bench agent and idleTimeout 1h,
// ready once a status query answers, a turn one `ask` update answered
// once committed.
func agentLoadSpec(dc client.Client, queue string) loadSpec {
	return loadSpec{
		name: "AgentTask",
		start: func(ctx context.Context, id string) error {
			_, err := dc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, contract.WorkflowType,
				map[string]any{"agent": benchAgent(), "idleTimeout": "1h"})
			return err
		},
		ready: func(ctx context.Context, id string) error {
			var st contract.Status
			return query(ctx, dc, id, contract.QueryStatus, nil, &st)
		},
		turn: func(ctx context.Context, id string, k int) error {
			h, err := dc.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateID: fmt.Sprintf("turn-%d", k),
				UpdateName: contract.UpdateAsk, Args: []any{agentText(k)}, WaitForStage: client.WorkflowUpdateStageCompleted})
			if err != nil {
				return err
			}
			var out contract.AskResult
			if err := h.Get(ctx, &out); err != nil {
				return err
			}
			if len(out.Output.Message) == 0 || out.Output.CommittedAt == "" {
				return fmt.Errorf("the answer has no message or is not committed: %+v", out.Output)
			}
			return nil
		},
	}
}

// medianRSS is the median of `samples` readings of VmRSS, 1 s apart.
func medianRSS(pid, samples int) uint64 {
	var rs []uint64
	for i := range samples {
		if i > 0 {
			time.Sleep(time.Second)
		}
		rs = append(rs, procStatus(pid, "VmRSS"))
	}
	slices.Sort(rs)
	return rs[len(rs)/2]
}

// workerBinary is AGENT_WORKER_BIN (make bench sets it to bin/worker), or
// cmd/worker built into a temporary folder when it is unset.
func workerBinary() (string, func(), error) {
	if b := os.Getenv("AGENT_WORKER_BIN"); b != "" {
		return b, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "agenttask-bench-worker-")
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Join(tmp, "worker")
	fmt.Fprintln(os.Stderr, "bench: AGENT_WORKER_BIN unset; building cmd/worker into", tmp)
	build := exec.Command("go", "build", "-o", bin, "./cmd/worker")
	build.Dir = moduleRoot()
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		_ = os.RemoveAll(tmp)
		return "", nil, fmt.Errorf("building cmd/worker: %w", err)
	}
	return bin, func() { _ = os.RemoveAll(tmp) }, nil
}

// workerEnvSpec is what every worker process of the phase shares.
type workerEnvSpec struct {
	bin, addr, model, transcripts string
	tuning                        workerkit.Tuning
}

// environ is a worker process's environment: this one's, minus every
// variable the worker reads (AGENT_*, TEMPORAL_*, the model providers'),
// plus the phase's.
func (s workerEnvSpec) environ(queue string, stickyCache int) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AGENT_") || strings.HasPrefix(k, "TEMPORAL_") || strings.HasPrefix(k, "OTEL_") ||
			slices.Contains([]string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
				"GEMINI_API_KEY", "GEMINI_BASE_URL", "MODEL_CATALOG"}, k) {
			continue
		}
		env = append(env, kv)
	}
	providers, _ := json.Marshal(map[string]any{"test": map[string]string{"baseURL": s.model}})
	set := func(k string, v any) { env = append(env, fmt.Sprintf("%s=%v", k, v)) }
	set("TEMPORAL_ADDRESS", s.addr)
	set("TEMPORAL_NAMESPACE", "default")
	set(workerkit.EnvTaskQueue, queue)
	set(workerkit.EnvTranscriptURL, s.transcripts)
	set("AGENT_MODEL_PROVIDERS", string(providers))
	set(workerkit.EnvLogLevel, "warn")
	set(workerkit.EnvStopTimeout, workerStopTimeout)
	t := s.tuning
	for _, f := range []struct {
		env string
		v   int
	}{{workerkit.EnvWorkflowSlots, t.WorkflowSlots}, {workerkit.EnvActivitySlots, t.ActivitySlots},
		{workerkit.EnvWorkflowPollers, t.WorkflowPollers}, {workerkit.EnvActivityPollers, t.ActivityPollers},
		{workerkit.EnvStickyCache, stickyCache}} {
		if f.v > 0 {
			set(f.env, f.v)
		}
	}
	if t.StickyTimeout > 0 {
		set(workerkit.EnvStickyTimeout, t.StickyTimeout)
	}
	return env
}

// workerProc is a running bin/worker.
type workerProc struct {
	cmd    *exec.Cmd
	stderr *tailWriter
	done   chan struct{}
	err    error // once done is closed
}

// startWorkerProc starts a worker process on queue and waits until it
// polls the queue for workflow and activity tasks.
func startWorkerProc(ctx context.Context, c client.Client, s workerEnvSpec, queue string, stickyCache int) (*workerProc, error) {
	w := &workerProc{stderr: &tailWriter{max: 4096}, done: make(chan struct{})}
	w.cmd = exec.Command(s.bin)
	w.cmd.Env = s.environ(queue, stickyCache)
	w.cmd.Stdout, w.cmd.Stderr = w.stderr, w.stderr
	if err := w.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", s.bin, err)
	}
	go func() { w.err = w.cmd.Wait(); close(w.done) }()
	identity := fmt.Sprintf("%d@", w.cmd.Process.Pid)
	deadline := time.Now().Add(time.Minute)
	for {
		if w.exited() {
			return nil, fmt.Errorf("%s on %s exited: %s", s.bin, queue, w.why())
		}
		if polls(ctx, c, queue, identity, enumspb.TASK_QUEUE_TYPE_WORKFLOW) && polls(ctx, c, queue, identity, enumspb.TASK_QUEUE_TYPE_ACTIVITY) {
			return w, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			w.stop()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("%s on %s did not poll within a minute: %s", s.bin, queue, w.why())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// polls says whether a poller of identity's process is on queue.
func polls(ctx context.Context, c client.Client, queue, identity string, typ enumspb.TaskQueueType) bool {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := c.DescribeTaskQueue(dctx, queue, typ)
	if err != nil {
		return false
	}
	for _, p := range resp.GetPollers() {
		if strings.HasPrefix(p.GetIdentity(), identity) {
			return true
		}
	}
	return false
}

func (w *workerProc) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// why is the process's exit status (when it exited) and its last output.
func (w *workerProc) why() string {
	s := "running"
	if w.exited() {
		s = fmt.Sprint(w.err)
	}
	if out := strings.TrimSpace(w.stderr.String()); out != "" {
		s += "; its last output: " + out
	}
	return s
}

// stop sends SIGTERM and waits (killing after 30 s).
func (w *workerProc) stop() {
	if w.exited() {
		return
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(30 * time.Second):
		_ = w.cmd.Process.Kill()
		<-w.done
	}
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = bytes.Clone(t.buf[over:])
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
