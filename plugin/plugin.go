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
//
// New and FromEnv are its only constructors; package worker's Run serves a
// task queue with the same plugin and nothing else.
package plugin

import (
	"context"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/agenttask/agenttask/internal/telemetry"
	"github.com/agenttask/agenttask/internal/workerkit"
	"github.com/agenttask/agenttask/worker"
)

// Name is the plugin's name to the SDK.
const Name = workerkit.PluginName

// Plugin is a Temporal worker plugin (go.temporal.io/sdk/worker.Plugin) and
// client plugin (go.temporal.io/sdk/client.Plugin).
//
// On a worker it registers AgentTask and its activities when the worker
// starts (StartWorker), opening the transcript store, the mounts, the MCP
// pool and the broker, and closes them once the worker has stopped
// (StopWorker); on a workflow replayer it registers AgentTask alone. On a
// client it sets the codec's data and failure converters and the tracing
// interceptor.
//
// Which workers it serves: with Config.TaskQueue "" every worker it is
// given; otherwise the worker of that queue. Set on a client, it reaches
// every worker made from the client and quietly skips those of other
// queues; given to a worker of another queue directly, worker.New panics
// with the reason (the SDK turns a plugin's error there into a panic).
type Plugin struct {
	//lint:ignore U1000 embedded for the SDK's unexported mustEmbed methods, which staticcheck does not see used
	workerBase
	//lint:ignore U1000 as workerBase
	clientBase
	cfg  worker.Config
	impl *workerkit.Plugin
}

// The SDK's plugins embed its bases (named here so the two do not clash).
type (
	//lint:ignore U1000 see Plugin
	workerBase = sdkworker.PluginBase
	//lint:ignore U1000 see Plugin
	clientBase = client.PluginBase
)

var (
	_ sdkworker.Plugin = (*Plugin)(nil)
	_ client.Plugin    = (*Plugin)(nil)
)

// Option tunes New.
type Option func(*settings)

type settings struct {
	kit []workerkit.PluginOption
}

// WithTracing adds a tracing interceptor (go.temporal.io/sdk/contrib/opentelemetry's,
// usually) to the clients the plugin configures.
func WithTracing(i interceptor.Interceptor) Option {
	return func(s *settings) { s.kit = append(s.kit, workerkit.WithTracing(i)) }
}

// New makes the plugin for cfg. It opens nothing yet: each worker it serves
// opens its storage when it starts and closes it once it has stopped. It
// sizes the process's sticky cache (cfg.Tuning) before any worker it serves
// is made.
func New(cfg worker.Config, opts ...Option) (*Plugin, error) {
	var s settings
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	impl, err := workerkit.NewPlugin(workerkit.FromPublic(cfg), s.kit...)
	if err != nil {
		return nil, err
	}
	return &Plugin{cfg: cfg, impl: impl}, nil
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

// Config is the configuration the plugin serves.
func (p *Plugin) Config() worker.Config { return p.cfg }

// Name is Name, the plugin's name to the SDK.
func (p *Plugin) Name() string { return p.impl.Name() }

// ConfigureClient sets the codec's data and failure converters (when the
// configuration has codec keys) and the tracing interceptor on a client.
func (p *Plugin) ConfigureClient(ctx context.Context, o client.PluginConfigureClientOptions) error {
	return p.impl.ConfigureClient(ctx, o)
}

// NewClient makes the client (the plugin adds nothing there).
func (p *Plugin) NewClient(ctx context.Context, o client.PluginNewClientOptions, next func(context.Context, client.PluginNewClientOptions) error) error {
	return p.impl.NewClient(ctx, o, next)
}

// ConfigureWorker sets the options the runtime needs on a worker it serves:
// the heartbeat throttle, the tuning, the deployment version and the
// interceptors.
func (p *Plugin) ConfigureWorker(ctx context.Context, o sdkworker.PluginConfigureWorkerOptions) error {
	return p.impl.ConfigureWorker(ctx, o)
}

// StartWorker opens the worker's storage and registers AgentTask, its
// activities and agents.Ask's activity, then starts the worker; when the
// worker fails to start it closes what it opened.
func (p *Plugin) StartWorker(ctx context.Context, o sdkworker.PluginStartWorkerOptions, next func(context.Context, sdkworker.PluginStartWorkerOptions) error) error {
	return p.impl.StartWorker(ctx, o, next)
}

// StopWorker stops the worker (its running activities finish within
// Tuning.StopTimeout), then closes the storage they used.
func (p *Plugin) StopWorker(ctx context.Context, o sdkworker.PluginStopWorkerOptions, next func(context.Context, sdkworker.PluginStopWorkerOptions)) {
	p.impl.StopWorker(ctx, o, next)
}

// ConfigureWorkflowReplayer sets the codec's converters on a replayer.
func (p *Plugin) ConfigureWorkflowReplayer(ctx context.Context, o sdkworker.PluginConfigureWorkflowReplayerOptions) error {
	return p.impl.ConfigureWorkflowReplayer(ctx, o)
}

// ReplayWorkflow registers AgentTask (alone: a replayer runs no
// activities) before each replay.
func (p *Plugin) ReplayWorkflow(ctx context.Context, o sdkworker.PluginReplayWorkflowOptions, next func(context.Context, sdkworker.PluginReplayWorkflowOptions) error) error {
	return p.impl.ReplayWorkflow(ctx, o, next)
}
