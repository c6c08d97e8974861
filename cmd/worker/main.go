// Command worker serves AgentTask workflows and their activities on any
// Temporal: it reads TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and the TLS /
// API-key variables Temporal's own tools use, and the AGENT_* variables
// listed in docs/configuration.md.
package main

import (
	"context"
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
	"github.com/agenttask/agenttask/internal/telemetry"
	"github.com/agenttask/agenttask/internal/workerkit"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "healthcheck" {
		os.Exit(healthcheck(os.Args[2:]))
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := workerkit.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	z, err := logging.New(cfg.LogLevel, cfg.LogJSON)
	if err != nil {
		return err
	}
	defer func() { _ = z.Sync() }()
	// Data under a key this process does not hold: named at error level
	// (and on /healthz).
	codec.LogMissingKeys(logging.NewSDKLogger(z))
	// Metrics on AGENT_METRICS_ADDR and tracing through the client's
	// interceptor, which the worker made from it uses too.
	tel, err := telemetry.FromEnv(ctx, os.Getenv, "agenttask-worker")
	if err != nil {
		return err
	}
	defer tel.Shutdown()
	opts, err := connect.Options(os.Getenv, logging.NewSDKLogger(z))
	if err != nil {
		return err
	}
	tel.Apply(&opts)
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return fmt.Errorf("connecting to Temporal at %s: %w", opts.HostPort, err)
	}
	defer c.Close()
	// The broker is optional at run time: the worker starts and serves
	// without it, connecting in the background, and says in its log and on
	// /healthz whether streaming is on.
	features := []connect.Feature{newerRulesFeature()}
	if cfg.BrokerURL != "" {
		events, err := broker.Start(cfg.BrokerURL, "agenttask-worker "+cfg.TaskQueue,
			connect.LogStreaming(log.With(logging.NewSDKLogger(z), "broker", broker.Redact(cfg.BrokerURL)), "streamed turns run unstreamed"))
		if err != nil {
			return fmt.Errorf("the broker %s (%s): %w", broker.Redact(cfg.BrokerURL), broker.EnvURL, err)
		}
		defer events.Close()
		cfg.Broker = events
		features = append(features, connect.Streaming(events))
	}
	if err := serveHealth(ctx, os.Getenv(EnvHealthAddr), c, features...); err != nil {
		return err
	}
	cfg.Metrics = tel.ActivityMetrics()
	cfg.Log = logging.NewSDKLogger(z) // the retention schedule's upkeep
	addr, err := tel.Serve(ctx)
	if err != nil {
		return err
	}
	z.Sugar().Infow("worker starting", "address", opts.HostPort, "namespace", opts.Namespace,
		"task_queue", cfg.TaskQueue, "transcripts", cfg.TranscriptURL, "metrics", addr, "stop_timeout", cfg.Tuning.StopTimeout)
	return workerkit.Run(ctx, cfg, c)
}
