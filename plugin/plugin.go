// Package plugin adds the agent runtime to any Go worker with one line:
//
//	p, err := plugin.FromEnv(os.Getenv)
//	w := worker.New(c, "support", worker.Options{Plugins: []worker.Plugin{p}})
//
// The plugin registers AgentTask and its activities under their API names,
// with the transcript store, mounts, model router, broker and codec from a
// worker.Config (or the documented environment), plus the activity
// agents.Ask uses. Set on a client (client.Options.Plugins) it also gives
// the client the codec's data converter and the tracing interceptor, and
// reaches the workers made from it. docs/worker.md shows it whole.
package plugin

import (
	"context"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/agenttask/agenttask/internal/telemetry"
	"github.com/agenttask/agenttask/worker"
)

// Plugin is a Temporal worker plugin and client plugin.
type Plugin = worker.Plugin

// Option tunes New.
type Option = worker.PluginOption

var (
	_ sdkworker.Plugin = (*Plugin)(nil)
	_ client.Plugin    = (*Plugin)(nil)
)

// WithTracing adds a tracing interceptor (go.temporal.io/sdk/contrib/opentelemetry's)
// to the clients the plugin configures.
var WithTracing = worker.WithTracing

// New makes the plugin for cfg; it opens storage only when a worker starts.
func New(cfg worker.Config, opts ...Option) (*Plugin, error) {
	return worker.NewPlugin(cfg, opts...)
}

// FromEnv reads the worker's environment (worker.ConfigFromEnv: AGENT_*,
// AGENT_CODEC_KEYS, the model providers) and, unless OTEL_SDK_DISABLED=true,
// traces through Temporal's OpenTelemetry interceptor with the standard
// OTEL_* variables. AGENT_TASK_QUEUE (default agent-tasks) is the queue it
// serves: set it to your worker's queue.
func FromEnv(getenv func(string) string) (*Plugin, error) {
	cfg, err := worker.ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	tp, err := telemetry.NewTracerProvider(context.Background(), getenv, "agenttask-worker")
	if err != nil {
		return nil, err
	}
	var opts []Option
	if tp != nil {
		tracing, err := telemetry.NewTracingInterceptor(tp)
		if err != nil {
			return nil, err
		}
		opts = append(opts, WithTracing(tracing))
	}
	return New(cfg, opts...)
}
