package workerkit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"gocloud.dev/blob"

	"github.com/agenttask/agenttask/agents"
	"github.com/agenttask/agenttask/internal/a2a"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/catalog"
	"github.com/agenttask/agenttask/internal/cleanup"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/mcp"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/telemetry"
	"github.com/agenttask/agenttask/internal/transcript"
	"github.com/agenttask/agenttask/internal/workflows"
)

// PluginName names the plugin to the SDK.
const PluginName = "agenttask"

// Plugin adds the runtime to any Go worker: a Temporal worker plugin
// (go.temporal.io/sdk/worker.Plugin) that registers AgentTask and its
// activities under their API names, and a client plugin
// (go.temporal.io/sdk/client.Plugin) that sets the codec's data converter and
// the tracing interceptor. Package plugin wraps it for teams (plugin.New,
// plugin.FromEnv); Run serves a task queue through it.
//
// Which workers it serves: with Config.TaskQueue "" every worker it is
// given; otherwise the worker of that queue. Set on a client
// (client.Options.Plugins), it reaches every worker made from the client
// and quietly skips those of other queues; given to a worker of another
// queue directly, worker.New panics with the reason (the SDK turns a
// plugin's error there into a panic).
type Plugin struct {
	*temporal.SimplePlugin
	cfg Config

	mu       sync.Mutex
	onClient bool                    // ConfigureClient ran: the plugin reaches every worker of a client
	dc       converter.DataConverter // the client's data converter (configureClient), for the rules memo
	queues   map[string]string       // worker instance key -> its task queue
	running  map[string]*resources   // worker instance key -> what its run opened
}

// PluginOption tunes NewPlugin.
type PluginOption func(*temporal.SimplePluginOptions)

// WithTracing adds a tracing interceptor (Temporal's OpenTelemetry one,
// usually) to the clients the plugin configures.
func WithTracing(i interceptor.Interceptor) PluginOption {
	return func(o *temporal.SimplePluginOptions) {
		if i != nil {
			o.ClientInterceptors = append(o.ClientInterceptors, i)
		}
	}
}

// NewPlugin makes the plugin for cfg. It opens nothing yet: each worker it
// serves opens the transcript store, the mounts and the broker when it
// starts and closes them once it has stopped.
func NewPlugin(cfg Config, opts ...PluginOption) (*Plugin, error) {
	if cfg.TranscriptURL == "" {
		return nil, fmt.Errorf("the agenttask plugin needs Config.TranscriptURL (%s): where tasks keep their transcripts, such as file:///var/lib/agenttask or s3://bucket", EnvTranscriptURL)
	}
	if cfg.MaxAgentDepth != 0 {
		if err := workflows.SetMaxAgentDepth(cfg.MaxAgentDepth); err != nil {
			return nil, err
		}
	}
	p := &Plugin{cfg: cfg, queues: map[string]string{}, running: map[string]*resources{}}
	so := temporal.SimplePluginOptions{
		Name:             PluginName,
		ConfigureClient:  p.configureClient,
		ConfigureWorker:  p.configureWorker,
		RunContextBefore: p.before,
		// Resources are closed in StopWorker, after the worker stopped
		// (RunContextAfter runs before it, while activities still finish).
	}
	if cfg.Codec != nil {
		// The payload codec: the same keys as the transcript store's.
		so.DataConverter = cfg.Codec.DataConverter()
	}
	for _, o := range opts {
		o(&so)
	}
	sp, err := temporal.NewSimplePlugin(so)
	if err != nil {
		return nil, err
	}
	p.SimplePlugin = sp
	// The SDK reads the sticky cache's size when the process's first worker
	// is made: before any worker this plugin serves.
	cfg.Tuning.SetStickyCache()
	return p, nil
}

// Config is the configuration the plugin serves.
func (p *Plugin) Config() Config { return p.cfg }

func (p *Plugin) configureClient(_ context.Context, o client.PluginConfigureClientOptions) error {
	p.mu.Lock()
	p.onClient = true
	p.dc = o.ClientOptions.DataConverter // the workflow reads its rules memo with it
	p.mu.Unlock()
	if p.cfg.Codec != nil {
		// Failures too: their messages move into the encrypted attributes.
		o.ClientOptions.FailureConverter = p.cfg.Codec.FailureConverter()
	}
	return nil
}

// serves says whether the plugin serves a worker of queue.
func (p *Plugin) serves(queue string) (bool, error) {
	if p.cfg.TaskQueue == "" || p.cfg.TaskQueue == queue {
		return true, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.onClient {
		return false, nil // another worker of the same client
	}
	return false, fmt.Errorf("the agenttask plugin serves task queue %q (Config.TaskQueue, %s) but was given a worker of %q; give it to that queue's worker, or set Config.TaskQueue to %q (or \"\" for any worker)", p.cfg.TaskQueue, EnvTaskQueue, queue, queue)
}

func (p *Plugin) configureWorker(_ context.Context, o sdkworker.PluginConfigureWorkerOptions) error {
	ok, err := p.serves(o.TaskQueue)
	if !ok {
		return err
	}
	p.mu.Lock()
	_, again := p.queues[o.WorkerInstanceKey]
	p.queues[o.WorkerInstanceKey] = o.TaskQueue
	p.mu.Unlock()
	if again {
		return nil // given twice (on the client and the worker): once is enough
	}
	wo := o.WorkerOptions
	if wo.MaxHeartbeatThrottleInterval == 0 {
		// Heartbeats reach the server at least every second whatever the
		// heartbeat timeout (30 s for model calls), so cancel-turn reaches
		// a running call within about two seconds.
		wo.MaxHeartbeatThrottleInterval = time.Second
	}
	p.cfg.Tuning.Apply(wo)
	// A version of a Worker Deployment (Config.Deployment, or the team's
	// own DeploymentOptions): AgentTask runs move to the current version
	// when they continue as new.
	applyDeployment(p.cfg.Deployment, wo)
	if wo.DeploymentOptions.UseVersioning {
		wo.Interceptors = append(wo.Interceptors, &upgradeOnContinueAsNew{})
	}
	// Model calls run in the trace of the input they answer (after the
	// client's tracing interceptor, when it has one).
	wo.Interceptors = append(wo.Interceptors, telemetry.TurnTraces())
	return nil
}

// before opens the worker's resources and registers the runtime with them;
// a replayer gets the workflow alone.
func (p *Plugin) before(ctx context.Context, o temporal.SimplePluginRunContextBeforeOptions) error {
	if o.WorkflowReplayer {
		Register(o.Registry, &workflows.Workflows{}, nil)
		return nil
	}
	p.mu.Lock()
	queue, ok := p.queues[o.InstanceKey]
	_, opened := p.running[o.InstanceKey]
	p.mu.Unlock()
	if !ok || opened {
		return nil // a worker of another queue (configureWorker skipped it), or the plugin given twice
	}
	res, err := open(ctx, p.cfg, queue)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.running[o.InstanceKey] = res
	p.mu.Unlock()
	// The `messages` query reads earlier runs without waiting on storage
	// under the workflow's lock (QueryReader).
	p.mu.Lock()
	dc := p.dc
	p.mu.Unlock()
	if dc == nil && p.cfg.Codec != nil {
		dc = p.cfg.Codec.DataConverter()
	}
	Register(o.Registry, &workflows.Workflows{Transcript: NewQueryReader(res.transcript), DataConverter: dc}, res.activities(p.cfg))
	// Deletion (DeleteTask, PurgeTaskObjects): this worker has the storage.
	cleanup.Register(o.Registry, &cleanup.Activities{Storage: cleanup.Storage{Transcript: res.transcript.Store, Files: res.files, Mounts: p.cfg.Mounts, Broker: res.events}})
	// Retention (RetentionSweep, SweepPage): the sweep lists this store,
	// then the mounts' spaces that have no transcript.
	cleanup.RegisterRetention(o.Registry, &cleanup.Sweeper{Transcript: res.transcript.Store, Files: res.files, Mounts: p.cfg.Mounts, Retention: p.cfg.Retention})
	// The follow-up activity of agents.Ask, for the team's workflows.
	o.Registry.RegisterActivityWithOptions(agents.AskActivity, activity.RegisterOptions{Name: agents.AskActivityName})
	return nil
}

// StartWorker closes what the run opened when the worker then fails to
// start (StopWorker is not called then).
func (p *Plugin) StartWorker(ctx context.Context, o sdkworker.PluginStartWorkerOptions, next func(context.Context, sdkworker.PluginStartWorkerOptions) error) error {
	err := p.SimplePlugin.StartWorker(ctx, o, next)
	if err != nil {
		p.release(o.WorkerInstanceKey)
	}
	return err
}

// StopWorker stops the worker first (its running activities finish within
// Tuning.StopTimeout), then closes the resources they used. SimplePlugin's
// RunContextAfter would run before the stop, under running model calls.
func (p *Plugin) StopWorker(ctx context.Context, o sdkworker.PluginStopWorkerOptions, next func(context.Context, sdkworker.PluginStopWorkerOptions)) {
	p.SimplePlugin.StopWorker(ctx, o, next)
	p.release(o.WorkerInstanceKey)
}

func (p *Plugin) release(key string) {
	p.mu.Lock()
	res := p.running[key]
	delete(p.running, key)
	delete(p.queues, key)
	p.mu.Unlock()
	if res != nil {
		res.close()
	}
}

// resources are what one worker's run opened.
type resources struct {
	transcript TranscriptAdapter
	files      *mount.Store
	events     *broker.Broker
	mcp        *mcp.Pool   // nil: the operator lists no MCP servers
	a2a        *a2a.Client // nil: the operator lists no A2A agents
	closers    []func()
}

// open opens the transcript store, the mounts and (unless cfg.Broker is
// given) the broker for a worker of queue.
func open(ctx context.Context, cfg Config, queue string) (*resources, error) {
	var wrap func(*blob.Bucket) *blob.Bucket
	if cfg.Codec != nil {
		wrap = cfg.Codec.WrapBucket // transcript and stash objects encrypted
	}
	store, err := transcript.OpenWith(ctx, cfg.TranscriptURL, wrap)
	if err != nil {
		return nil, fmt.Errorf("opening the transcript store %s: %w", cfg.TranscriptURL, err)
	}
	res := &resources{transcript: TranscriptAdapter{Store: store}, files: mount.NewStoreWith(cfg.WrapMountBucket)}
	res.closers = append(res.closers, func() { _ = store.Close() }, func() { _ = res.files.Close() })
	// The broker is optional at run time: without it (now or later) the
	// worker serves, and streamed turns run unstreamed.
	res.events = cfg.Broker
	if res.events == nil && cfg.BrokerURL != "" {
		res.events, err = broker.Start(cfg.BrokerURL, "agenttask-worker "+queue, nil)
		if err != nil {
			res.close()
			return nil, fmt.Errorf("the broker %s (%s): %w", broker.Redact(cfg.BrokerURL), broker.EnvURL, err)
		}
		res.closers = append(res.closers, res.events.Close)
	}
	if res.events != nil && cfg.Codec != nil {
		res.events.SetCodec(cfg.Codec) // streamed text encrypted in the broker too
	}
	if len(cfg.A2AAgents) > 0 {
		res.a2a = a2a.NewClient(cfg.A2AAgents, nil)
	}
	if len(cfg.MCPServers) > 0 {
		res.mcp = mcp.NewPool(cfg.MCPServers, nil) // connects on first use: a server down now is waited out later
		if cfg.Log != nil {
			res.mcp.LogStderrTo(func(server, line string) { cfg.Log.Info("MCP server stderr", "server", server, "line", line) })
		}
		res.closers = append(res.closers, func() { _ = res.mcp.Close() })
	}
	return res, nil
}

func (r *resources) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// activities are the runtime's activities over the worker's resources.
func (r *resources) activities(cfg Config) *activities.Activities {
	return &activities.Activities{
		Models:      llm.NewRouter(cfg.Models),
		Transcript:  r.transcript,
		Files:       r.files,
		Mounts:      cfg.Mounts,
		OutputModel: cfg.OutputModel,
		Signals:     activityClient{}, // retry reports to the task (status.retrying)
		Queries:     activityClient{}, // a run's turn context, read from the task when unseen
		Broker:      r.events,
		Metrics:     cfg.Metrics,
		MCP:         r.mcp,
		A2A:         r.a2a,
		Prices:      cfg.prices(),
	}
}

// prices is the catalogue budgets price calls with.
func (c Config) prices() *catalog.Catalog {
	if c.Catalog != nil {
		return c.Catalog
	}
	return catalog.Builtin()
}

// activityClient signals through the running activity's own client
// (activity.GetClient, SDK v1.50). The plugin has no client when it
// registers (a plugin given only to a worker never sees one, and a client
// captured in ConfigureClient/NewClient would be the last of several
// clients sharing the plugin, not necessarily the worker's), while the
// activity's client is always the one of the worker running it.
type activityClient struct{}

func (activityClient) SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error {
	return activity.GetClient(ctx).SignalWorkflow(ctx, workflowID, runID, signalName, arg)
}

func (activityClient) QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error) {
	return activity.GetClient(ctx).QueryWorkflow(ctx, workflowID, runID, queryType, args...)
}
