// Command bench measures what an AgentTask turn costs on Temporal: the
// history events and bytes each turn adds (and whether that stays flat over
// a 500-turn conversation that continues as new), and the time a turn takes
// beside a bare Temporal loop doing one trivial activity per signal. It
// starts its own embedded server (bin/agentdev server), one in-process
// worker and the zero-latency test model, prints a report and exits non-zero
// when a threshold fails. Last, it runs 1,000 conversations at once on one
// worker process beside a bare Temporal loop (load.go). Run it with
// `make bench`; docs/bench.md explains the numbers.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/logging"
	"github.com/agenttask/agenttask/internal/testmodel"
	"github.com/agenttask/agenttask/internal/workerkit"
)

// The thresholds.
const (
	wantEventsPerTurn = 10
	maxBytesRatio     = 1.2  // turns 480-500 against turns 10-30 of one conversation
	maxOverheadRatio  = 1.10 // median turn, AgentTask against BareLoop
	maxP90Ratio       = 1.20 // p90 turn, the same
	maxBareBytesRatio = 1.10 // bytes per turn, the same turns
)

// The history windows compared (1-based turns, inclusive).
var (
	earlyWindow = [2]int{10, 30}
	lateWindow  = [2]int{480, 500}
)

const agentQueue = "bench-agent"

type options struct {
	turns      int
	warm       int
	pairs      int
	poll       time.Duration
	pause      time.Duration
	instrument bool
	cpuProfile string
	skipHist   bool
	skipOver   bool
	skipPrefix bool
	streamRuns int
	loadConvs  int
	loadTurns  int
	profile    string
}

func main() { os.Exit(run()) }

func run() int {
	var o options
	flag.IntVar(&o.turns, "turns", 500, "turns of the history conversation")
	flag.IntVar(&o.warm, "warm", 20, "warm-up turns of each side before the overhead is measured")
	flag.IntVar(&o.pairs, "pairs", 300, "measured turns of each side (AgentTask and BareLoop alternate)")
	flag.DurationVar(&pollEvery, "poll", time.Millisecond, "pause between two queries of one turn")
	flag.DurationVar(&o.pause, "pause", 100*time.Millisecond, "pause after each turn of the overhead measurement (keeps the server's 20/s workflow-task dispatch limit out of the timings)")
	flag.BoolVar(&o.instrument, "instrument", false, "time the model activity's parts (transcript, model call) in the worker")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (driver and worker) during the overhead measurement")
	flag.StringVar(&loadCPUProfile, "load-cpuprofile", "", "write a CPU profile of this process during each load side, to this path with the side's name appended (.BareAsk, .AgentTask)")
	flag.BoolVar(&o.skipHist, "skip-history", false, "skip the history measurement (thresholds 1 and 2 then fail)")
	flag.BoolVar(&o.skipOver, "skip-overhead", false, "skip the overhead measurement (threshold 3 then fails)")
	flag.BoolVar(&o.skipPrefix, "skip-prefix", false, "skip the cache-stable requests measurement (its thresholds then fail)")
	flag.IntVar(&o.streamRuns, "stream-runs", 30, "streamed runs (and as many unstreamed) of the streaming measurement; 0 skips it (thresholds 4 and 5 then fail)")
	flag.IntVar(&o.loadConvs, "load-conversations", 1000, "conversations at once in the load measurement; 0 skips it (thresholds 6 and 7 then fail)")
	flag.IntVar(&o.loadTurns, "load-turns", 10, "turns of each conversation of the load measurement")
	flag.StringVar(&o.profile, "profile", "throughput", "the server's dynamic-config profile: throughput, or default for Temporal's own limits (agentdev profile NAME lists one)")
	// Memory and scale (scale.go), on bin/worker processes (AGENT_WORKER_BIN).
	flag.IntVar(&scaleFlags.idle, "idle-conversations", 10000, "idle conversations on one worker process, sticky cache on and off, for its memory per conversation; 0 skips it")
	flag.IntVar(&scaleFlags.convs, "scale-conversations", 1000, "conversations at once against one worker process and then two; 0 skips it")
	flag.IntVar(&scaleFlags.turns, "scale-turns", 10, "turns of each conversation against one and two worker processes")
	flag.Parse()
	if o.turns < lateWindow[1] && !o.skipHist {
		fmt.Fprintf(os.Stderr, "bench: -turns must be at least %d\n", lateWindow[1])
		return 2
	}
	if o.loadConvs > 0 && o.loadTurns < 1 {
		fmt.Fprintln(os.Stderr, "bench: -load-turns must be at least 1")
		return 2
	}
	o.poll = pollEvery
	if err := bench(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return exitCode
}

// exitCode is 1 when the report found a threshold failed.
var exitCode int

func bench(o options) error {
	began := time.Now()
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()

	g, err := startRig(ctx, o)
	if err != nil {
		return err
	}
	defer g.close()
	rep := &report{opts: o, began: began, serverBin: serverBinLabel()}
	if err := g.measure(ctx, o, rep); err != nil {
		return err
	}
	rep.elapsed = time.Since(began)
	if !rep.print(os.Stdout) {
		exitCode = 1
	}
	return nil
}

// logProgress says what the bench is doing, on stderr: stdout has the
// report alone.
func logProgress(s string) { fmt.Fprintf(os.Stderr, "bench: %s\n", s) }

// rig is what the measurements run on: the bench's server, the driving
// client, the two model endpoints and this process's workers.
type rig struct {
	srv      *server
	c        client.Client     // the driver's connection
	model    *testmodel.Server // Echo, no delay
	cfg      workerkit.Config  // the AgentTask worker's
	tuning   workerkit.Tuning  // AGENT_WORKER_*, as the worker binary reads them
	timings  *activityTimings  // -instrument; nil otherwise
	bareLean bareModel         // BareLoop's model client
	// undo stops what was started, in the order started; close runs it
	// backwards, as the defers of one function would.
	undo []func()
}

func (g *rig) close() {
	for i := len(g.undo) - 1; i >= 0; i-- {
		g.undo[i]()
	}
}

// startRig starts the rig; on an error, what it started is stopped.
func startRig(ctx context.Context, o options) (*rig, error) {
	g := &rig{}
	if err := g.start(ctx, o); err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}

func (g *rig) start(ctx context.Context, o options) error {
	// agentdev server takes its profile from AGENTDEV_PROFILE (see
	// cmd/agentdev), so startServer's command line stays as it is.
	_ = os.Setenv("AGENTDEV_PROFILE", o.profile)
	srv, err := startServer()
	if err != nil {
		return err
	}
	g.srv, g.undo = srv, append(g.undo, srv.stop)
	logProgress("server ready at " + srv.addr)

	c, err := client.Dial(client.Options{HostPort: srv.addr, Namespace: "default", Logger: quietLogger{}})
	if err != nil {
		return fmt.Errorf("dialing %s: %w", srv.addr, err)
	}
	g.c, g.undo = c, append(g.undo, c.Close)

	g.model = testmodel.Start()
	g.undo = append(g.undo, g.model.Close)
	// The overhead's model keeps nothing and parses only what it answers
	// (loadmodel.go): the test model keeps every call and decodes the
	// whole request, work a provider does, not the runtime. BareLoop asks
	// it too (bareModel).
	lean := startLoadModel()
	g.undo = append(g.undo, lean.Close)
	transcripts, err := os.MkdirTemp("", "agenttask-bench-transcripts-")
	if err != nil {
		return err
	}
	g.undo = append(g.undo, func() { os.RemoveAll(transcripts) })
	return g.startWorkers(ctx, o, lean.URL, transcripts)
}

// startWorkers makes this one worker process, on one client connection:
// AgentTask on its queue through workerkit.Run as shipped, BareLoop on its
// own queue through a second SDK worker on the same client.
func (g *rig) startWorkers(ctx context.Context, o options, leanURL, transcripts string) error {
	z, err := logging.New("warn", false)
	if err != nil {
		return err
	}
	wc, err := client.NewClientFromExisting(g.c, client.Options{Logger: logging.NewSDKLogger(z)})
	if err != nil {
		return err
	}
	g.undo = append(g.undo, wc.Close)
	// The AGENT_WORKER_* tuning, as the worker binary reads it. The sticky
	// cache is the process's: sized before any worker of it exists.
	if g.tuning, err = workerkit.TuningFromEnv(os.Getenv); err != nil {
		return err
	}
	g.tuning.SetStickyCache()
	g.cfg = workerkit.Config{
		Tuning:        g.tuning,
		TaskQueue:     agentQueue,
		TranscriptURL: "file://" + filepath.ToSlash(transcripts),
		Models:        llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"test": {BaseURL: g.model.URL}, leanProvider: {BaseURL: leanURL}}},
		LogLevel:      "warn",
		BrokerURL:     g.srv.nats, // streamed runs only: the other tasks publish nothing
	}
	g.runAgentWorker(ctx, o.instrument, wc)
	bw := sdkworker.New(wc, bareQueue, sdkworker.Options{})
	g.bareLean = newBareModel(leanURL)
	registerBare(bw, g.bareLean)
	if err := bw.Start(); err != nil {
		return fmt.Errorf("starting the BareLoop worker: %w", err)
	}
	g.undo = append(g.undo, bw.Stop)
	return nil
}

// runAgentWorker runs the AgentTask worker until the rig closes: as
// shipped, or with its activity's parts timed (-instrument).
func (g *rig) runAgentWorker(ctx context.Context, instrument bool, wc client.Client) {
	cfg := g.cfg
	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan error, 1)
	if instrument {
		timings := newActivityTimings()
		g.timings = timings
		go func() { workerDone <- runInstrumentedWorker(wctx, cfg, wc, timings) }()
	} else {
		go func() { workerDone <- workerkit.Run(wctx, cfg, wc) }()
	}
	g.undo = append(g.undo, func() {
		stopWorker()
		if err := <-workerDone; err != nil {
			fmt.Fprintln(os.Stderr, "bench: worker:", err)
		}
	})
}

// measure runs every measurement the flags leave in, in the report's
// order, into rep.
func (g *rig) measure(ctx context.Context, o options, rep *report) error {
	var err error
	if !o.skipHist {
		logProgress(fmt.Sprintf("history: %d turns on one AgentTask", o.turns))
		if rep.hist, err = measureHistory(ctx, g.c, agentQueue, o.turns, logProgress); err != nil {
			return err
		}
	}
	if !o.skipOver {
		if err := g.overheadPhase(ctx, o, rep); err != nil {
			return err
		}
	}
	if o.streamRuns > 0 {
		logProgress(fmt.Sprintf("streaming: %d streamed and %d unstreamed runs through the Tasks API", o.streamRuns, o.streamRuns))
		if rep.stream, err = measureStreaming(ctx, g.c, g.srv.nats, g.model, o.streamRuns, logProgress); err != nil {
			return err
		}
	}
	if !o.skipPrefix {
		logProgress(fmt.Sprintf("prefix: two conversations of %d turns, the window as shipped and as before", prefixTurns))
		if rep.prefix, err = measurePrefix(ctx, g.c, g.cfg, g.model, logProgress); err != nil {
			return err
		}
	}
	if o.loadConvs > 0 {
		logProgress(fmt.Sprintf("load: %d conversations × %d turns at once, BareAsk then AgentTask, each on a server of its own", o.loadConvs, o.loadTurns))
		env := loadEnv{agentdev: g.srv.cmd.Path, profile: o.profile, tuning: g.tuning}
		if rep.load, err = measureLoad(ctx, env, o.loadConvs, o.loadTurns, logProgress); err != nil {
			return err
		}
	}
	senv := scaleEnv{addr: g.srv.addr, server: g.srv.cmd.Process, tuning: g.tuning}
	rep.scale, err = measureScale(ctx, senv, logProgress) // scale.go; nil when both are skipped
	return err
}

// overheadPhase measures the turn overhead, with this process's CPU
// profile (-cpuprofile) and the worker's timings (-instrument) covering
// that phase alone.
func (g *rig) overheadPhase(ctx context.Context, o options, rep *report) error {
	logProgress(fmt.Sprintf("overhead: %d warm-up + %d measured turns of AgentTask and BareLoop, alternating", o.warm, o.pairs))
	if g.timings != nil {
		g.timings.reset()
	}
	stopProfile, err := startProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	rep.over, err = measureOverhead(ctx, g.c, agentQueue, g.bareLean, o.warm, o.pairs, o.pause, logProgress)
	stopProfile()
	if err != nil {
		return err
	}
	rep.timings = g.timings
	return nil
}

func startProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func serverBinLabel() string {
	if b := os.Getenv("AGENTDEV_BIN"); b != "" {
		return b
	}
	return "agentdev built by the bench"
}

// quietLogger keeps the driving client's SDK logs out of the report.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
