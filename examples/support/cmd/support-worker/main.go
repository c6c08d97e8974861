// Command support-worker hosts the support sample (examples/support) and
// the agent runtime in one process: TriageTicket, AgentTask and the
// runtime's activities and LookupCustomer on task queue "support", one
// worker, the runtime through the plugin alone. It reads the worker's environment
// (docs/configuration.md: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, AGENT_*,
// AGENT_MODEL_PROVIDERS, AGENT_CODEC_KEYS), SUPPORT_MODEL (the agents'
// model, default openai/gpt-4o-mini) and SUPPORT_TOOLS_QUEUE (a queue of
// its own for LookupCustomer; unset: the one worker runs it).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/examples/support"
	"github.com/agenttask/agenttask/plugin"
	"github.com/agenttask/agenttask/worker"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "support-worker:", err)
		os.Exit(1)
	}
}

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	queue := getenv(worker.EnvTaskQueue, support.TaskQueue)
	p, err := plugin.FromEnv(func(k string) string {
		if k == worker.EnvTaskQueue {
			return queue // the plugin serves the support queue
		}
		return os.Getenv(k)
	})
	if err != nil {
		return err
	}
	addr := getenv("TEMPORAL_ADDRESS", "localhost:7233")
	// The plugin on the client gives it the codec (AGENT_CODEC_KEYS) and
	// tracing, and reaches the workers made from it.
	c, err := client.Dial(client.Options{HostPort: addr, Namespace: getenv("TEMPORAL_NAMESPACE", "default"), Plugins: []client.Plugin{p}})
	if err != nil {
		return fmt.Errorf("connecting to Temporal at %s: %w", addr, err)
	}
	defer c.Close()
	w := &support.Workflows{Model: getenv("SUPPORT_MODEL", support.DefaultModel), ToolsQueue: os.Getenv("SUPPORT_TOOLS_QUEUE")}
	fmt.Fprintf(os.Stderr, "support-worker: %s, %s and the agent runtime on %q (Temporal %s)\n",
		support.WorkflowName, support.LookupCustomerName, getenv("SUPPORT_TOOLS_QUEUE", queue), addr)
	return w.Run(ctx, c, p, queue)
}
