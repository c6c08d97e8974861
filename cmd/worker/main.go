// Command worker serves AgentTask workflows and their activities on any
// Temporal: it reads TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and the TLS /
// API-key variables Temporal's own tools use, and the AGENT_* variables
// listed in the README.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agenttask/agenttask/connect"
	"github.com/agenttask/agenttask/logging"
	"github.com/agenttask/agenttask/worker"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := worker.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	z, err := logging.New(cfg.LogLevel, cfg.LogJSON)
	if err != nil {
		return err
	}
	defer func() { _ = z.Sync() }()
	c, opts, err := connect.Dial(ctx, os.Getenv, logging.NewSDKLogger(z))
	if err != nil {
		return err
	}
	defer c.Close()
	z.Sugar().Infow("worker starting", "address", opts.HostPort, "namespace", opts.Namespace,
		"task_queue", cfg.TaskQueue, "transcripts", cfg.TranscriptURL)
	return worker.Run(ctx, cfg, c)
}
