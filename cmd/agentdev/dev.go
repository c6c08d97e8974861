package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/broker/embedded"
	"github.com/agenttask/agenttask/internal/devserver"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/logging"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/tasksapi"
	"github.com/agenttask/agenttask/internal/telemetry"
	"github.com/agenttask/agenttask/internal/workflows"
	"github.com/agenttask/agenttask/starter"
	"github.com/agenttask/agenttask/worker"
)

// runDev is `make run`: the embedded server (SQLite under the data folder,
// so tasks survive a restart) and Web UI, a worker, and a demo task; then it
// keeps serving until Ctrl-C.
func runDev(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("agentdev run", flag.ContinueOnError)
	dataDir := fs.String("data", envOr(worker.EnvDataDir, worker.DefaultDataDir), "folder for the database and transcripts (git-ignored)")
	port := fs.Int("port", devserver.DefaultFrontendPort, "frontend gRPC port")
	uiPort := fs.Int("ui-port", devserver.DefaultUIPort, "Web UI port; -1 disables it")
	db := fs.String("db", "", "the database: a SQLite `file` or a PostgreSQL URL postgres://USER:PASSWORD@HOST:PORT/DBNAME; default DATA/temporal.db")
	demo := fs.Bool("demo", true, "start the demo task")
	natsPort := fs.Int("nats-port", DefaultNATSPort, "the embedded broker's port (streamed runs); -1 runs none")
	dc := dynamicConfigFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := os.MkdirAll(*dataDir, 0o755); err != nil {
		return err
	}
	_ = os.Setenv(worker.EnvDataDir, *dataDir)
	if os.Getenv(mount.EnvMounts) == "" {
		// The dev stack's one mount, "files": a folder under the data dir
		// (`starter upload --mount files` writes there with the same setting).
		files, err := filepath.Abs(filepath.Join(*dataDir, "files"))
		if err != nil {
			return err
		}
		b, _ := json.Marshal(map[string]string{"files": "file://" + filepath.ToSlash(files)})
		_ = os.Setenv(mount.EnvMounts, string(b))
		fmt.Printf("Agents' mounts: %s (set %s to change)\n", b, mount.EnvMounts)
	}
	if os.Getenv(broker.EnvURL) == "" && *natsPort >= 0 {
		// The dev stack's broker: NATS JetStream in this process, its
		// streams under the data folder.
		b, err := embedded.Start(embedded.Options{Dir: filepath.Join(*dataDir, "nats"), Port: *natsPort})
		if err != nil {
			return fmt.Errorf("the embedded broker (-nats-port -1 runs none): %w", err)
		}
		defer b.Shutdown()
		_ = os.Setenv(broker.EnvURL, b.URL())
		fmt.Printf("Broker (NATS):     %s (streamed runs; set %s to use another)\n", b.URL(), broker.EnvURL)
	}
	cfg, err := worker.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	// The sticky cache is the process's, sized before its first worker (the
	// Tasks API runs one too).
	cfg.Tuning.SetStickyCache()
	z, err := logging.New(cfg.LogLevel, cfg.LogJSON)
	if err != nil {
		return err
	}
	defer func() { _ = z.Sync() }()
	serverLog, err := stderrLogger("warn")
	if err != nil {
		return err
	}

	if *db == "" {
		*db = filepath.Join(*dataDir, "temporal.db")
	}
	shown := *db
	if isPostgresURL(*db) {
		if u, err := url.Parse(*db); err == nil {
			shown = u.Redacted()
		}
	}
	fmt.Printf("Starting the embedded Temporal server (database %s)...\n", shown)
	dbFile, persistence, err := database(*db, serverLog)
	if err != nil {
		return err
	}
	srv, err := devserver.Start(ctx, devserver.Options{
		DatabaseFile:     dbFile,
		Persistence:      persistence,
		FrontendPort:     *port,
		UIPort:           *uiPort,
		UICodec:          uiCodec(cfg.Codec, *uiPort),
		Namespace:        "default",
		SearchAttributes: devserver.SearchAttributes,
		Logger:           serverLog,
		Profile:          *dc.profile,
		DynamicConfig:    dc.values,
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("Stopping the server...")
		_ = srv.Stop()
	}()
	copts := client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace(), Logger: logging.NewSDKLogger(z)}
	cfg.Codec.Apply(&copts) // payloads encrypted when AGENT_CODEC_KEYS is set
	// Metrics on AGENT_METRICS_ADDR and tracing, for this process's worker
	// and Tasks API (one client, one registry).
	tel, err := telemetry.FromEnv(ctx, os.Getenv, "agenttask-dev")
	if err != nil {
		return err
	}
	defer tel.Shutdown()
	tel.Apply(&copts)
	cfg.Metrics = tel.ActivityMetrics()
	metricsAddr, err := tel.Serve(ctx)
	if err != nil {
		return err
	}
	c, err := client.DialContext(ctx, copts)
	if err != nil {
		return err
	}
	defer c.Close()

	workerCtx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan error, 1)
	go func() { workerDone <- worker.Run(workerCtx, cfg, c) }()
	defer func() { stopWorker(); <-workerDone }()

	fmt.Printf("Temporal frontend: %s (namespace %s; dynamic-config profile %s, listed by bin/agentdev profile %s)\n", srv.FrontendHostPort(), srv.Namespace(), *dc.profile, *dc.profile)
	if srv.UIURL() != "" {
		fmt.Printf("Temporal Web UI:   %s\n", srv.UIURL())
	}
	fmt.Printf("Worker:            task queue %q, transcripts in %s\n", cfg.TaskQueue, cfg.TranscriptURL)
	if metricsAddr != "" {
		fmt.Printf("Metrics:           http://%s%s (%s)\n", displayAddr(metricsAddr), telemetry.MetricsPath, telemetry.EnvMetricsAddr)
	}
	apiCtx, stopAPI := context.WithCancel(ctx)
	apiDone, err := startAPI(apiCtx, c, cfg.TaskQueue)
	if err != nil {
		stopAPI()
		return err
	}
	defer func() { stopAPI(); <-apiDone }()
	if *demo {
		if err := runDemo(ctx, starter.New(c, cfg.TaskQueue), cfg.Models, srv.UIURL()); err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
		}
	}
	fmt.Println("\nServing. Try: bin/starter start --agent '{\"name\":\"me\",\"model\":\"demo/offline\"}' --input 'Hello'")
	fmt.Println("Press Ctrl-C to stop.")
	select {
	case <-ctx.Done():
	case err := <-workerDone:
		workerDone <- err
		if err != nil {
			return fmt.Errorf("worker stopped: %w", err)
		}
	}
	return nil
}

// runDemo starts a conversation, sends a follow-up by update, and prints the
// conversation as `messages` returns it.
func runDemo(ctx context.Context, tasks *starter.Client, models llm.RouterOptions, uiURL string) error {
	// The offline demo model runs only when no real endpoint is configured;
	// otherwise AGENT_DEMO_MODEL, or gpt-4o-mini where OpenAI is configured.
	model := os.Getenv("AGENT_DEMO_MODEL")
	if model == "" {
		switch _, openai := models.Endpoints["openai"]; {
		case models.EnableDemo:
			model = llm.DemoModel
		case openai:
			model = "openai/gpt-4o-mini"
		default:
			return fmt.Errorf("no demo model: set AGENT_DEMO_MODEL to a provider/model your endpoints serve")
		}
	}
	args := workflows.StartArgs{
		Agent: contract.AgentSpec{
			Name:         "demo-assistant",
			Model:        model,
			Instructions: "You are a concise, friendly assistant. Answer in one or two sentences.",
			Parameters:   json.RawMessage(`{"type":"object","properties":{"customer":{"type":"string","description":"Who is writing"}}}`),
			Exposes:      json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string","description":"The topic of the conversation, in two or three words"}},"required":["topic"]}`),
			MaxTokens:    300,
		},
		Input: &contract.TaskIO{
			Message: []contract.ContentPart{contract.TextPart("Hello! What can a durable agent task do?")},
			Values:  map[string]json.RawMessage{"customer": json.RawMessage(`"Amina"`)},
		},
	}
	fmt.Printf("\nDemo: starting a task with model %s", model)
	if model == llm.DemoModel {
		fmt.Print(" (the built-in offline demo model; set OPENAI_API_KEY for a real one)")
	}
	fmt.Println()
	id, err := tasks.Start(ctx, args, starter.StartOptions{TaskID: fmt.Sprintf("demo-%s", time.Now().UTC().Format("20060102-150405.000000"))})
	if err != nil {
		return err
	}
	if err := waitOutputs(ctx, tasks, id, 1); err != nil {
		return err
	}
	follow := contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("And if the worker crashes halfway?")}}
	if _, err := tasks.Send(ctx, id, follow); err != nil {
		return err
	}
	if err := waitOutputs(ctx, tasks, id, 2); err != nil {
		return err
	}
	msgs, err := tasks.Messages(ctx, id, nil)
	if err != nil {
		return err
	}
	out, _ := json.MarshalIndent(msgs, "", "  ")
	fmt.Printf("Demo task %s, conversation (query \"messages\"):\n%s\n", id, out)
	if uiURL != "" {
		fmt.Printf("See it in the Web UI: %s/namespaces/default/workflows/%s\n", uiURL, id)
	}
	fmt.Printf("The task stays open for more inputs: bin/starter send %s 'one more question'\n", id)
	return nil
}

func waitOutputs(ctx context.Context, tasks *starter.Client, id string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		st, err := tasks.Status(ctx, id)
		if err != nil {
			return err
		}
		if st.Error != nil {
			return fmt.Errorf("the task failed: %s: %s", st.Error.Type, st.Error.Message)
		}
		if st.Outputs >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for output %d: %w", n, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// startAPI serves the Tasks API on AGENT_API_ADDR (default :8080). Unless
// DEVELOPER_KEYS or API_KEYS are set, it makes a developer key and a
// call+view key for this session and prints them.
func startAPI(ctx context.Context, c client.Client, runQueue string) (<-chan error, error) {
	if os.Getenv(tasksapi.EnvDeveloperKeys) == "" && os.Getenv(tasksapi.EnvAPIKeys) == "" {
		dev, call := randomKey("dev"), randomKey("key")
		_ = os.Setenv(tasksapi.EnvDeveloperKeys, dev)
		_ = os.Setenv(tasksapi.EnvAPIKeys, call+"=call+view")
		fmt.Printf("Tasks API keys:    developer %s, call+view %s (set %s / %s to choose)\n", dev, call, tasksapi.EnvDeveloperKeys, tasksapi.EnvAPIKeys)
	}
	cfg, err := tasksapi.ConfigFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	cfg.RunQueue = runQueue // runs go to this stack's worker
	devCodec(&cfg)          // the codec server open to this stack's Web UI
	ready := make(chan string, 1)
	cfg.Ready = func(addr string) { ready <- addr }
	done := make(chan error, 1)
	go func() { done <- tasksapi.Serve(ctx, c, cfg) }()
	select {
	case addr := <-ready:
		fmt.Printf("Tasks API:         http://%s (OpenAPI at /openapi.json)\n", displayAddr(addr))
	case err := <-done:
		return nil, fmt.Errorf("the Tasks API: %w", err)
	}
	return done, nil
}

func randomKey(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// displayAddr shows a wildcard listen address as localhost.
func displayAddr(addr string) string {
	if strings.HasPrefix(addr, "[::]:") || strings.HasPrefix(addr, "0.0.0.0:") {
		return "localhost:" + addr[strings.LastIndex(addr, ":")+1:]
	}
	return addr
}
