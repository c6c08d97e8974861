package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/broker/embedded"
	"github.com/agenttask/agenttask/internal/devserver"
	"github.com/agenttask/agenttask/internal/logging"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/telemetry"
	"github.com/agenttask/agenttask/internal/workerkit"
	"github.com/agenttask/agenttask/starter"
)

// runDev is `make run`: the embedded server (SQLite under the data folder,
// so tasks survive a restart) and Web UI, a worker, and a demo task; then it
// keeps serving until Ctrl-C.
func runDev(ctx context.Context, args []string) error {
	o, err := devFlags(args)
	if err != nil {
		return err
	}
	var st devStack
	defer st.stop()
	if err := o.prepareData(); err != nil {
		return err
	}
	logs, err := logsFor(o.dataDir, o.logConsole) // console.go
	if err != nil {
		return err
	}
	if err := o.startBroker(&st); err != nil {
		return err
	}
	cfg, z, err := workerConfig(&st, logs)
	if err != nil {
		return err
	}
	// Keys this data folder was written with and this start lacks are
	// named now, and any met later, in the log and on the console.
	reportMissingKeys(z, logs)
	if _, err := checkCodecKeys(o.dataDir, cfg.Codec, z); err != nil {
		return err
	}
	srv, err := o.startServer(ctx, &st, cfg, logs)
	if err != nil {
		return err
	}
	c, metricsAddr, err := dial(ctx, &st, srv, &cfg, z)
	if err != nil {
		return err
	}
	workerDone := startWorker(ctx, &st, cfg, c)
	o.printStack(srv, cfg, metricsAddr)
	fmt.Print(logs.banner())
	apiCtx, stopAPI := context.WithCancel(ctx)
	apiDone, err := startAPI(apiCtx, c, cfg.TaskQueue, cfg.TranscriptURL, logging.NewSDKLogger(z))
	if err != nil {
		stopAPI()
		return err
	}
	st.onStop(func() { stopAPI(); <-apiDone })
	if o.demo {
		if err := runDemo(ctx, starter.New(c, cfg.TaskQueue), cfg.Models, srv.UIURL()); err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
		}
	}
	return serveUntilStopped(ctx, workerDone)
}

// devOptions are the flags of `agentdev run`.
type devOptions struct {
	dataDir, db            string
	port, uiPort, natsPort int
	demo, logConsole       bool
	dc                     *dynamicConfig
}

func devFlags(args []string) (devOptions, error) {
	fs := flag.NewFlagSet("agentdev run", flag.ContinueOnError)
	dataDir := fs.String("data", envOr(workerkit.EnvDataDir, workerkit.DefaultDataDir), "folder for the database and transcripts (git-ignored)")
	port := fs.Int("port", devserver.DefaultFrontendPort, "frontend gRPC port")
	uiPort := fs.Int("ui-port", devserver.DefaultUIPort, "Web UI port; -1 disables it")
	db := fs.String("db", "", "the database: a SQLite `file` or a PostgreSQL URL postgres://USER:PASSWORD@HOST:PORT/DBNAME; default DATA/temporal.db")
	demo := fs.Bool("demo", true, "start the demo task")
	natsPort := fs.Int("nats-port", DefaultNATSPort, "the embedded broker's port (streamed runs); -1 runs none")
	logConsole := fs.Bool("log-console", false, "structured logs on the console (default: in DATA/"+logFileName+", unless "+logging.EnvLevel+" is set)")
	dc := dynamicConfigFlags(fs)
	if err := fs.Parse(args); err != nil {
		return devOptions{}, err
	}
	return devOptions{dataDir: *dataDir, db: *db, port: *port, uiPort: *uiPort, natsPort: *natsPort, demo: *demo, logConsole: *logConsole, dc: dc}, nil
}

// devStack holds what the stack has started; stop ends it in reverse.
type devStack struct{ stops []func() }

func (s *devStack) onStop(f func()) { s.stops = append(s.stops, f) }

func (s *devStack) stop() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
}

// prepareData makes the data folder, the workers' (AGENT_DATA_DIR), and
// the dev stack's one mount unless AGENT_MOUNTS names others.
func (o devOptions) prepareData() error {
	if err := os.MkdirAll(o.dataDir, 0o755); err != nil {
		return err
	}
	_ = os.Setenv(workerkit.EnvDataDir, o.dataDir)
	if os.Getenv(mount.EnvMounts) != "" {
		return nil
	}
	// The dev stack's one mount, "files": a folder under the data dir
	// (`starter upload --mount files` writes there with the same setting).
	files, err := filepath.Abs(filepath.Join(o.dataDir, "files"))
	if err != nil {
		return err
	}
	b, _ := json.Marshal(map[string]string{"files": "file://" + filepath.ToSlash(files)})
	_ = os.Setenv(mount.EnvMounts, string(b))
	fmt.Printf("Agents' mounts: %s (set %s to change)\n", b, mount.EnvMounts)
	return nil
}

// startBroker runs the dev stack's broker unless AGENT_NATS_URL names one
// or -nats-port is -1: NATS JetStream in this process, its streams under
// the data folder.
func (o devOptions) startBroker(st *devStack) error {
	if os.Getenv(broker.EnvURL) != "" || o.natsPort < 0 {
		return nil
	}
	b, err := embedded.Start(embedded.Options{Dir: filepath.Join(o.dataDir, "nats"), Port: o.natsPort})
	if err != nil {
		return fmt.Errorf("the embedded broker (-nats-port -1 runs none): %w", err)
	}
	st.onStop(b.Shutdown)
	_ = os.Setenv(broker.EnvURL, b.URL())
	fmt.Printf("Broker (NATS):     %s (streamed runs; set %s to use another)\n", b.URL(), broker.EnvURL)
	return nil
}

// workerConfig is the worker's configuration, from the environment, and
// its logger.
func workerConfig(st *devStack, logs consoleLogs) (workerkit.Config, *zap.Logger, error) {
	cfg, err := workerkit.ConfigFromEnv(os.Getenv)
	if err != nil {
		return cfg, nil, err
	}
	// The sticky cache is the process's, sized before its first worker (the
	// Tasks API runs one too).
	cfg.Tuning.SetStickyCache()
	z, err := logs.logger(cfg.LogLevel, cfg.LogJSON, os.Stdout)
	if err != nil {
		return cfg, nil, err
	}
	st.onStop(func() { _ = z.Sync() })
	return cfg, z, nil
}

// startServer starts the embedded Temporal server and its Web UI.
func (o devOptions) startServer(ctx context.Context, st *devStack, cfg workerkit.Config, logs consoleLogs) (*devserver.Server, error) {
	serverLog, err := logs.serverLogger()
	if err != nil {
		return nil, err
	}
	db := o.db
	if db == "" {
		db = filepath.Join(o.dataDir, "temporal.db")
	}
	shown := db
	if isPostgresURL(db) {
		if u, err := url.Parse(db); err == nil {
			shown = u.Redacted()
		}
	}
	fmt.Printf("Starting the embedded Temporal server (database %s)...\n", shown)
	dbFile, persistence, err := database(db, serverLog)
	if err != nil {
		return nil, err
	}
	srv, err := devserver.Start(ctx, devserver.Options{
		DatabaseFile:     dbFile,
		Persistence:      persistence,
		FrontendPort:     o.port,
		UIPort:           o.uiPort,
		UICodec:          uiCodec(cfg.Codec, o.uiPort),
		Namespace:        "default",
		SearchAttributes: devserver.SearchAttributes,
		Logger:           serverLog,
		Profile:          *o.dc.profile,
		DynamicConfig:    o.dc.values,
	})
	if err != nil {
		return nil, err
	}
	st.onStop(func() {
		fmt.Println("Stopping the server...")
		_ = srv.Stop()
	})
	return srv, nil
}

// dial connects the stack's one client to the server, with metrics on
// AGENT_METRICS_ADDR and tracing for this process's worker and Tasks API
// (one client, one registry); it returns where metrics are served.
func dial(ctx context.Context, st *devStack, srv *devserver.Server, cfg *workerkit.Config, z *zap.Logger) (client.Client, string, error) {
	copts := client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace(), Logger: logging.NewSDKLogger(z)}
	cfg.Codec.Apply(&copts) // payloads encrypted when AGENT_CODEC_KEYS is set
	tel, err := telemetry.FromEnv(ctx, os.Getenv, "agenttask-dev")
	if err != nil {
		return nil, "", err
	}
	st.onStop(tel.Shutdown)
	tel.Apply(&copts)
	cfg.Metrics = tel.ActivityMetrics()
	metricsAddr, err := tel.Serve(ctx)
	if err != nil {
		return nil, "", err
	}
	c, err := client.DialContext(ctx, copts)
	if err != nil {
		return nil, "", err
	}
	st.onStop(c.Close)
	return c, metricsAddr, nil
}

// startWorker runs the worker until the stack stops; its end comes on the
// channel.
func startWorker(ctx context.Context, st *devStack, cfg workerkit.Config, c client.Client) chan error {
	workerCtx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan error, 1)
	go func() { workerDone <- workerkit.Run(workerCtx, cfg, c) }()
	st.onStop(func() { stopWorker(); <-workerDone })
	return workerDone
}

// printStack shows where the server, the Web UI, the worker and metrics are.
func (o devOptions) printStack(srv *devserver.Server, cfg workerkit.Config, metricsAddr string) {
	fmt.Printf("Temporal frontend: %s (namespace %s; dynamic-config profile %s, listed by bin/agentdev profile %s)\n", srv.FrontendHostPort(), srv.Namespace(), *o.dc.profile, *o.dc.profile)
	if srv.UIURL() != "" {
		fmt.Printf("Temporal Web UI:   %s\n", srv.UIURL())
	}
	fmt.Printf("Worker:            task queue %q, transcripts in %s\n", cfg.TaskQueue, cfg.TranscriptURL)
	if metricsAddr != "" {
		fmt.Printf("Metrics:           http://%s%s (%s)\n", displayAddr(metricsAddr), telemetry.MetricsPath, telemetry.EnvMetricsAddr)
	}
}

// serveUntilStopped keeps the stack up until Ctrl-C, or the worker's end.
func serveUntilStopped(ctx context.Context, workerDone chan error) error {
	fmt.Println("\nServing. Try: bin/starter start --agent '{\"name\":\"me\",\"model\":\"demo/offline\"}' --input 'Hello'")
	fmt.Println("Press Ctrl-C to stop.")
	select {
	case <-ctx.Done():
	case err := <-workerDone:
		workerDone <- err // for the stack's stop, which waits for it
		if err != nil {
			return fmt.Errorf("worker stopped: %w", err)
		}
	}
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
