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
	"github.com/agenttask/agenttask/worker"
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
	progress := func(s string) { fmt.Fprintf(os.Stderr, "bench: %s\n", s) }

	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()

	// agentdev server takes its profile from AGENTDEV_PROFILE (see
	// cmd/agentdev), so startServer's command line stays as it is.
	_ = os.Setenv("AGENTDEV_PROFILE", o.profile)
	srv, err := startServer()
	if err != nil {
		return err
	}
	defer srv.stop()
	progress("server ready at " + srv.addr)

	c, err := client.Dial(client.Options{HostPort: srv.addr, Namespace: "default", Logger: quietLogger{}})
	if err != nil {
		return fmt.Errorf("dialing %s: %w", srv.addr, err)
	}
	defer c.Close()

	model := testmodel.Start() // Echo, no delay
	defer model.Close()
	// The overhead's model keeps nothing and parses only what it answers
	// (loadmodel.go): the test model keeps every call and decodes the
	// whole request, work a provider does, not the runtime. BareLoop asks
	// it too (bareModel).
	lean := startLoadModel()
	defer lean.Close()
	transcripts, err := os.MkdirTemp("", "agenttask-bench-transcripts-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(transcripts)

	// One worker process (this one), one client connection: AgentTask on its
	// queue through worker.Run as shipped, BareLoop on its own queue through
	// a second SDK worker on the same client.
	z, err := logging.New("warn", false)
	if err != nil {
		return err
	}
	wc, err := client.NewClientFromExisting(c, client.Options{Logger: logging.NewSDKLogger(z)})
	if err != nil {
		return err
	}
	defer wc.Close()
	// The AGENT_WORKER_* tuning, as the worker binary reads it. The sticky
	// cache is the process's: sized before any worker of it exists.
	tuning, err := worker.TuningFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	tuning.SetStickyCache()
	cfg := worker.Config{
		Tuning:        tuning,
		TaskQueue:     agentQueue,
		TranscriptURL: "file://" + filepath.ToSlash(transcripts),
		Models:        llm.RouterOptions{Endpoints: map[string]llm.Endpoint{"test": {BaseURL: model.URL}, leanProvider: {BaseURL: lean.URL}}},
		LogLevel:      "warn",
		BrokerURL:     srv.nats, // streamed runs only: the other tasks publish nothing
	}
	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan error, 1)
	var timings *activityTimings
	if o.instrument {
		timings = newActivityTimings()
		go func() { workerDone <- runInstrumentedWorker(wctx, cfg, wc, timings) }()
	} else {
		go func() { workerDone <- worker.Run(wctx, cfg, wc) }()
	}
	defer func() {
		stopWorker()
		if err := <-workerDone; err != nil {
			fmt.Fprintln(os.Stderr, "bench: worker:", err)
		}
	}()
	bw := sdkworker.New(wc, bareQueue, sdkworker.Options{})
	bareLean := newBareModel(lean.URL)
	registerBare(bw, bareLean)
	if err := bw.Start(); err != nil {
		return fmt.Errorf("starting the BareLoop worker: %w", err)
	}
	defer bw.Stop()

	rep := &report{opts: o, began: began, serverBin: serverBinLabel()}
	if !o.skipHist {
		progress(fmt.Sprintf("history: %d turns on one AgentTask", o.turns))
		if rep.hist, err = measureHistory(ctx, c, agentQueue, o.turns, progress); err != nil {
			return err
		}
	}
	if !o.skipOver {
		progress(fmt.Sprintf("overhead: %d warm-up + %d measured turns of AgentTask and BareLoop, alternating", o.warm, o.pairs))
		if timings != nil {
			timings.reset()
		}
		stopProfile, err := startProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		rep.over, err = measureOverhead(ctx, c, agentQueue, bareLean, o.warm, o.pairs, o.pause, progress)
		stopProfile()
		if err != nil {
			return err
		}
		rep.timings = timings
	}
	if o.streamRuns > 0 {
		progress(fmt.Sprintf("streaming: %d streamed and %d unstreamed runs through the Tasks API", o.streamRuns, o.streamRuns))
		if rep.stream, err = measureStreaming(ctx, c, srv.nats, model, o.streamRuns, progress); err != nil {
			return err
		}
	}
	if !o.skipPrefix {
		progress(fmt.Sprintf("prefix: two conversations of %d turns, the window as shipped and as before", prefixTurns))
		if rep.prefix, err = measurePrefix(ctx, c, cfg, model, progress); err != nil {
			return err
		}
	}
	if o.loadConvs > 0 {
		progress(fmt.Sprintf("load: %d conversations × %d turns at once, BareAsk then AgentTask, each on a server of its own", o.loadConvs, o.loadTurns))
		env := loadEnv{agentdev: srv.cmd.Path, profile: o.profile, tuning: tuning}
		if rep.load, err = measureLoad(ctx, env, o.loadConvs, o.loadTurns, progress); err != nil {
			return err
		}
	}
	senv := scaleEnv{addr: srv.addr, server: srv.cmd.Process, tuning: tuning}
	if rep.scale, err = measureScale(ctx, senv, progress); err != nil { // scale.go; nil when both are skipped
		return err
	}
	rep.elapsed = time.Since(began)
	if !rep.print(os.Stdout) {
		exitCode = 1
	}
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
