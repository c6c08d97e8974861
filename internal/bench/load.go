package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/logging"
	"github.com/agenttask/agenttask/internal/workerkit"
)

// Load: N conversations of K turns at once on one worker process,
// beside a bare Temporal loop at the same concurrency.
//
// Each side starts its N workflows, checks each has run its first workflow
// task (a query), then drives them all at once: one goroutine per
// conversation sends turn 1 as an update that returns when the answer is
// committed, then turn 2, and so on. A turn's latency is that one call;
// the side's throughput is its N×K turns over the time from the first turn
// sent to the last answer. BareAsk runs first, AgentTask second, each on a
// fresh server of its own with fresh workers (loadOnItsOwnServer); the
// workflows of a side are terminated before the next.
//
// Both sides run on workers of their own, in this process, on a client
// connection of their own: AgentTask through workerkit.Run as shipped,
// BareAsk on a plain SDK worker, both with the AGENT_WORKER_* tuning (and
// loadTuning's defaults where it is unset). The driver has another
// connection. The model is a minimal echo endpoint (startLoadModel) that
// keeps nothing, so the process's memory is the workers' and the driver's.

const (
	loadAgentQueue = "bench-load-agent"
	loadBareQueue  = "bench-load-bare"
	bareAskType    = "BareAsk"
	bareAskUpdate  = "ask"   // arg: a string; returns the model's answer to it, through one activity
	bareAskQuery   = "turns" // returns the turns answered
	// loadTurnTimeout bounds one turn; under load a turn waits its place
	// behind the other conversations' work, so this is generous.
	loadTurnTimeout = 3 * time.Minute
	// loadStartParallel bounds the concurrent start and readiness calls.
	loadStartParallel = 50
)

// BareAsk is the baseline of the load measurement: an `ask` update runs one
// activity that asks the load's model (bareModel) and replies with its
// answer. It is what an AgentTask
// `ask` turn does (update accepted, a workflow task, an activity, a
// workflow task, update completed) minus the product. It runs until
// terminated.
func BareAsk(ctx workflow.Context) error {
	turns := 0
	if err := workflow.SetQueryHandler(ctx, bareAskQuery, func() (int, error) { return turns, nil }); err != nil {
		return err
	}
	err := workflow.SetUpdateHandler(ctx, bareAskUpdate, func(ctx workflow.Context, in string) (string, error) {
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
		var out string
		if err := workflow.ExecuteActivity(actx, bareActivity, in).Get(ctx, &out); err != nil {
			return "", err
		}
		turns++
		return out, nil
	})
	if err != nil {
		return err
	}
	return workflow.Await(ctx, func() bool { return false })
}

// The load phase's workers take the AGENT_WORKER_* tuning where it is set,
// and otherwise these: with the SDK's 2 pollers and 5 s sticky timeout, the
// workflow tasks of 1,000 conversations wait longer than 5 s on this 2-core
// machine, time out of the worker's sticky queue and come back with their
// whole history, which adds work to a saturated server (docs/bench.md).
const (
	loadWorkflowPollers = 16
	loadStickyTimeout   = time.Minute
)

// loadTuning fills the unset fields of env with the load phase's defaults,
// and says which fields it filled.
func loadTuning(env workerkit.Tuning) (workerkit.Tuning, map[string]bool) {
	t, filled := env, map[string]bool{}
	if t.WorkflowPollers == 0 {
		t.WorkflowPollers, filled["workflow pollers"] = loadWorkflowPollers, true
	}
	if t.StickyTimeout == 0 {
		t.StickyTimeout, filled["sticky timeout"] = loadStickyTimeout, true
	}
	return t, filled
}

// loadEnv is what the load measurement needs from the bench.
type loadEnv struct {
	agentdev string           // the bench server's binary: read for the profile's settings, run for each side's server
	profile  string           // the profile it runs
	tuning   workerkit.Tuning // AGENT_WORKER_*
}

// loadResult is the whole measurement.
type loadResult struct {
	N, Turns    int
	Profile     string
	Settings    []profileSetting // the profile's, read from agentdev
	Tuning      workerkit.Tuning
	BenchSet    map[string]bool // the tuning fields the bench chose (loadTuning)
	Bare, Agent *loadSide
	Elapsed     time.Duration
}

// loadSide is one side's figures.
type loadSide struct {
	Name      string
	Start     time.Duration   // starting N workflows, each through its first workflow task
	Wall      time.Duration   // first turn sent .. last answer
	Latencies []time.Duration // every answered turn
	Errors    int             // failed turns, and workflows that failed to start
	FirstErrs []string        // the first few, for the report
	// The bench process (the workers, the driver, the echo model) and the
	// server: RSS before the side (after a GC) and its peak during the side
	// (VmHWM, reset before the side; 0 when the kernel refused the reset),
	// and CPU time used during the side.
	RSSBefore, RSSPeak uint64
	ServerRSSBefore    uint64
	ServerRSSPeak      uint64
	CPU, ServerCPU     time.Duration
	// The Go runtime's view of this process, at its highest 100 ms sample:
	// heap spans in use (live data and garbage not yet collected), goroutine
	// stacks (every cached workflow keeps a few), goroutines.
	HeapPeak, StackPeak     uint64
	GoroutinePeak           int
	PeakExact, ServerPeakOK bool
	// Sampled workflows' histories (every tenth): how many, and their
	// workflow tasks that timed out waiting to be picked up (a worker
	// behind by more than its sticky timeout, or a task matching refused).
	Sampled, TimedOutTasks int
}

func (s *loadSide) throughput() float64 {
	if s.Wall <= 0 {
		return 0
	}
	return float64(len(s.Latencies)) / s.Wall.Seconds()
}

// profileSetting mirrors devserver.Setting (read as JSON from `agentdev
// profile -json`, so the bench reports what the server binary runs).
type profileSetting struct {
	Key     string `json:"key"`
	Value   any    `json:"value"`
	Default any    `json:"default"`
	Why     string `json:"why"`
}

func measureLoad(ctx context.Context, env loadEnv, n, turns int, progress func(string)) (*loadResult, error) {
	began := time.Now()
	res := &loadResult{N: n, Turns: turns, Profile: env.profile}
	res.Tuning, res.BenchSet = loadTuning(env.tuning)
	var err error
	if res.Settings, err = readProfile(env.agentdev, env.profile); err != nil {
		return nil, err
	}

	model := startLoadModel()
	defer model.Close()
	transcripts, err := os.MkdirTemp("", "agenttask-bench-load-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(transcripts)

	stamp := began.UnixNano()
	agent := agentAskSide(workerkit.Config{
		TaskQueue:     loadAgentQueue,
		TranscriptURL: "file://" + filepath.ToSlash(transcripts),
		Models:        llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"test": {BaseURL: model.URL}}},
		LogLevel:      "error",
		Tuning:        res.Tuning,
	})
	for _, side := range []struct {
		name string
		run  loadWorker
		into **loadSide
	}{{"BareAsk", bareAskSide(res.Tuning, newBareModel(model.URL)), &res.Bare}, {"AgentTask", agent, &res.Agent}} {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("bench-load-%s-%d-%04d", strings.ToLower(side.name), stamp, i)
		}
		s, err := loadOnItsOwnServer(ctx, env.agentdev, side.name, side.run, ids, turns, progress)
		if err != nil {
			return nil, err
		}
		*side.into = s
	}
	res.Elapsed = time.Since(began)
	return res, nil
}

// loadOnItsOwnServer runs one side on a fresh server of its own (the
// bench's agentdev binary and profile), with fresh workers and clients: a
// side that ran second on the first side's server would pay for it, since
// the first side's 1,000 histories stay in the in-memory database (the
// second side's server CPU per turn was ~2 ms higher, whichever side ran
// second; docs/bench.md).
func loadOnItsOwnServer(ctx context.Context, agentdev, name string, run loadWorker, ids []string, turns int, progress func(string)) (*loadSide, error) {
	srv, err := startServerOf(agentdev)
	if err != nil {
		return nil, fmt.Errorf("starting the %s side's server: %w", name, err)
	}
	defer srv.stop()

	// The workers' connection, as a worker process has, and the driver's.
	z, err := logging.New("error", false)
	if err != nil {
		return nil, err
	}
	wc, err := client.Dial(client.Options{HostPort: srv.addr, Namespace: "default", Logger: logging.NewSDKLogger(z)})
	if err != nil {
		return nil, err
	}
	defer wc.Close()
	dc, err := client.Dial(client.Options{HostPort: srv.addr, Namespace: "default", Logger: quietLogger{}})
	if err != nil {
		return nil, err
	}
	defer dc.Close()

	spec, stop, err := run(ctx, wc, dc)
	if err != nil {
		return nil, err
	}
	defer stop()
	path := ""
	if loadCPUProfile != "" {
		path = loadCPUProfile + "." + name
	}
	stopProfile, err := startProfile(path)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	return runLoadSide(ctx, dc, srv.cmd.Process, spec, ids, turns, progress)
}

// loadCPUProfile is -load-cpuprofile: where each side's CPU profile of this
// process goes ("" for none).
var loadCPUProfile string

// loadWorker starts a side's worker on wc and returns how dc drives the
// side, and how to stop the worker.
type loadWorker func(ctx context.Context, wc, dc client.Client) (loadSpec, func(), error)

// bareAskSide runs BareAsk on a plain SDK worker, asking model.
func bareAskSide(tuning workerkit.Tuning, model bareModel) loadWorker {
	return func(_ context.Context, wc, dc client.Client) (loadSpec, func(), error) {
		var bopts sdkworker.Options
		tuning.Apply(&bopts)
		bw := sdkworker.New(wc, loadBareQueue, bopts)
		bw.RegisterWorkflowWithOptions(BareAsk, workflow.RegisterOptions{Name: bareAskType})
		bw.RegisterActivityWithOptions(bareActivities{model: model}.BareActivity, activity.RegisterOptions{Name: bareActivity})
		if err := bw.Start(); err != nil {
			return loadSpec{}, nil, fmt.Errorf("starting the BareAsk worker: %w", err)
		}
		return bareAskSpec(dc), bw.Stop, nil
	}
}

// agentAskSide runs AgentTask through workerkit.Run, as shipped.
func agentAskSide(cfg workerkit.Config) loadWorker {
	return func(ctx context.Context, wc, dc client.Client) (loadSpec, func(), error) {
		wctx, stopWorker := context.WithCancel(ctx)
		workerDone := make(chan error, 1)
		go func() { workerDone <- workerkit.Run(wctx, cfg, wc) }()
		return agentAskSpec(dc), func() {
			stopWorker()
			<-workerDone
		}, nil
	}
}

// bareAskSpec drives BareAsk: an `ask` update answered with the echo of
// its input.
func bareAskSpec(dc client.Client) loadSpec {
	return loadSpec{
		name: "BareAsk",
		start: func(ctx context.Context, id string) error {
			_, err := dc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: loadBareQueue}, bareAskType)
			return err
		},
		ready: func(ctx context.Context, id string) error {
			var t int
			return query(ctx, dc, id, bareAskQuery, nil, &t)
		},
		turn: func(ctx context.Context, id string, k int) error {
			in := payload(k)
			h, err := dc.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateID: fmt.Sprintf("turn-%d", k),
				UpdateName: bareAskUpdate, Args: []any{in}, WaitForStage: client.WorkflowUpdateStageCompleted})
			if err != nil {
				return err
			}
			var out string
			if err := h.Get(ctx, &out); err != nil {
				return err
			}
			if want := "echo: " + in; out != want {
				return fmt.Errorf("answered %q, want %q", out, want)
			}
			return nil
		},
	}
}

// agentAskSpec drives AgentTask: an `ask` update answered once committed.
func agentAskSpec(dc client.Client) loadSpec {
	return loadSpec{
		name: "AgentTask",
		start: func(ctx context.Context, id string) error {
			_, err := dc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: loadAgentQueue}, contract.WorkflowType,
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

// loadSpec is how one side starts, checks and drives a workflow.
type loadSpec struct {
	name  string
	start func(ctx context.Context, id string) error
	ready func(ctx context.Context, id string) error
	turn  func(ctx context.Context, id string, k int) error
}

func runLoadSide(ctx context.Context, c client.Client, server *os.Process, spec loadSpec, ids []string, turns int, progress func(string)) (*loadSide, error) {
	s := &loadSide{Name: spec.name}
	var mu sync.Mutex
	fail := func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		s.Errors++
		if len(s.FirstErrs) < 5 {
			s.FirstErrs = append(s.FirstErrs, what+": "+err.Error())
		}
	}
	// Whatever happens, the side's workflows end with it.
	defer terminateAll(c, ids)

	// Memory and CPU are read around the side: a GC first, so the RSS
	// before is what the process holds, not garbage of earlier phases.
	runtime.GC()
	debug.FreeOSMemory()
	s.RSSBefore, s.ServerRSSBefore = procStatus(os.Getpid(), "VmRSS"), procStatus(server.Pid, "VmRSS")
	s.PeakExact = resetPeakRSS(os.Getpid())
	s.ServerPeakOK = resetPeakRSS(server.Pid)
	cpu0, scpu0 := cpuTime(os.Getpid()), cpuTime(server.Pid)
	stopHeap := sampleMemory(s)

	t0 := time.Now()
	progress(fmt.Sprintf("load: %s: starting %d workflows", spec.name, len(ids)))
	started := make([]bool, len(ids))
	parallel(len(ids), loadStartParallel, func(i int) {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := spec.start(sctx, ids[i]); err != nil {
			fail("start "+ids[i], err)
			return
		}
		if err := retryQuery(sctx, func(ctx context.Context) error { return spec.ready(ctx, ids[i]) }); err != nil {
			fail("first workflow task of "+ids[i], err)
			return
		}
		started[i] = true
	})
	s.Start = time.Since(t0)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	progress(fmt.Sprintf("load: %s: %d conversations × %d turns at once", spec.name, len(ids), turns))
	var done atomic.Int64
	lat := make([][]time.Duration, len(ids))
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i, id := range ids {
		if !started[i] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			for k := 1; k <= turns; k++ {
				tctx, cancel := context.WithTimeout(ctx, loadTurnTimeout)
				t := time.Now()
				err := spec.turn(tctx, id, k)
				d := time.Since(t)
				cancel()
				if err != nil {
					fail(fmt.Sprintf("%s turn %d", id, k), err)
					if ctx.Err() != nil {
						return
					}
					continue
				}
				lat[i] = append(lat[i], d)
				done.Add(1)
			}
		}()
	}
	stopProgress := every(10*time.Second, func(el time.Duration) {
		progress(fmt.Sprintf("load: %s: %d/%d turns (%s)", spec.name, done.Load(), len(ids)*turns, el.Round(time.Second)))
	})
	t1 := time.Now()
	close(gate)
	wg.Wait()
	s.Wall = time.Since(t1)
	stopProgress()
	stopHeap()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	for _, l := range lat {
		s.Latencies = append(s.Latencies, l...)
	}
	s.CPU, s.ServerCPU = cpuTime(os.Getpid())-cpu0, cpuTime(server.Pid)-scpu0
	s.RSSPeak, s.ServerRSSPeak = procStatus(os.Getpid(), "VmHWM"), procStatus(server.Pid, "VmHWM")
	s.Sampled, s.TimedOutTasks = timedOutTasks(ctx, c, ids, started)
	progress(fmt.Sprintf("load: %s: %d turns in %s, %d errors", spec.name, len(s.Latencies), s.Wall.Round(time.Millisecond), s.Errors))
	return s, nil
}

// latencySummary is one side's turn latencies.
type latencySummary struct{ P50, P90, P99, Max time.Duration }

func summarizeLatency(ds []time.Duration) latencySummary {
	if len(ds) == 0 {
		return latencySummary{}
	}
	return latencySummary{percentile(ds, 50), percentile(ds, 90), percentile(ds, 99), slices.Max(ds)}
}
