// Command api serves the Tasks API (docs/tasks-api.md) on any Temporal:
// stored prompts and tasks kept in Temporal itself, and their runs. It reads
// TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE (the project) and Temporal's TLS /
// API-key variables, API_KEYS, DEVELOPER_KEYS, MODEL_CATALOG,
// AGENT_API_ADDR, AGENT_API_TASK_QUEUE, AGENT_TASK_QUEUE (where runs go),
// AGENT_API_RUN_TIMEOUT, AGENT_API_PROCESSED_IN, AGENT_NATS_URL (the broker
// streamed runs come through), AGENT_TRANSCRIPT_URL (the workers' store,
// read for the messages of runs Temporal removed), AGENT_METRICS_ADDR
// (/metrics) and the OTEL_* tracing variables, AGENT_LOG_LEVEL and
// AGENT_LOG_JSON (docs/configuration.md). It refuses to start without keys.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/codec"
	"github.com/agenttask/agenttask/internal/connect"
	"github.com/agenttask/agenttask/internal/logging"
	"github.com/agenttask/agenttask/internal/tasksapi"
	"github.com/agenttask/agenttask/internal/telemetry"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "-openapi" {
		// The OpenAPI description, as served at /openapi.json (make openapi
		// writes it to internal/tasksapi/openapi.json).
		_, api := tasksapi.New(tasksapi.Config{})
		b, err := json.MarshalIndent(api.OpenAPI(), "", "  ")
		if err != nil {
			fmt.Fprintln(os.Stderr, "api:", err)
			os.Exit(1)
		}
		fmt.Println(string(b))
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := tasksapi.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	z, err := logging.New(logging.FromEnv(os.Getenv))
	if err != nil {
		return err
	}
	defer func() { _ = z.Sync() }()
	// Data under a key this process does not hold: named at error level
	// (and on /healthz).
	codec.LogMissingKeys(logging.NewSDKLogger(z))
	// Metrics on AGENT_METRICS_ADDR (the SDK's, of its client and of the
	// store's worker; runs are answered by the workers) and tracing of its
	// Temporal calls.
	tel, err := telemetry.FromEnv(ctx, os.Getenv, "agenttask-api")
	if err != nil {
		return err
	}
	defer tel.Shutdown()
	opts, err := connect.Options(os.Getenv, logging.NewSDKLogger(z))
	if err != nil {
		return err
	}
	tel.Apply(&opts)
	cfg.Log = logging.NewSDKLogger(z) // the codec server's audit lines
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return fmt.Errorf("connecting to Temporal at %s: %w", opts.HostPort, err)
	}
	defer c.Close()
	// The broker is optional at run time: the API starts and serves
	// without it, connecting in the background, and says in its log and on
	// /healthz whether streaming is on.
	if cfg.BrokerURL != "" {
		events, err := broker.Start(cfg.BrokerURL, "agenttask-api",
			connect.LogStreaming(log.With(logging.NewSDKLogger(z), "broker", broker.Redact(cfg.BrokerURL)),
				`streamed runs are refused (503 streaming_unavailable), runs without "stream" go on`))
		if err != nil {
			return fmt.Errorf("the broker %s (%s): %w", broker.Redact(cfg.BrokerURL), broker.EnvURL, err)
		}
		defer events.Close()
		cfg.Broker = events
	}
	metricsAddr, err := tel.Serve(ctx)
	if err != nil {
		return err
	}
	cfg.Ready = func(addr string) {
		z.Sugar().Infow("api listening", "addr", addr, "namespace", opts.Namespace, "task_queue", cfg.Queue, "metrics", metricsAddr)
	}
	return tasksapi.Serve(ctx, c, cfg)
}
