package plugin_test

import (
	"context"
	"encoding/base64"
	"errors"
	"path/filepath"
	"testing"

	"github.com/nexus-rpc/sdk-go/nexus"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/agents"
	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/histories"
	"github.com/agenttask/agenttask/plugin"
	"github.com/agenttask/agenttask/worker"
)

// registry records what a hook registers, as the SDK's worker would.
type registry struct{ workflows, activities []string }

func (r *registry) RegisterWorkflowWithOptions(_ any, o workflow.RegisterOptions) {
	r.workflows = append(r.workflows, o.Name)
}
func (r *registry) RegisterDynamicWorkflow(any, workflow.DynamicRegisterOptions) {}
func (r *registry) RegisterActivityWithOptions(_ any, o activity.RegisterOptions) {
	r.activities = append(r.activities, o.Name)
}
func (r *registry) RegisterDynamicActivity(any, activity.DynamicRegisterOptions) {}
func (r *registry) RegisterNexusService(*nexus.Service)                          {}

// newPlugin is the plugin for queue "agents" with transcripts under a
// temporary folder, as a team's main makes it from its environment.
func newPlugin(t *testing.T, env map[string]string) *plugin.Plugin {
	t.Helper()
	base := map[string]string{worker.EnvTaskQueue: "agents", worker.EnvTranscriptURL: "file://" + t.TempDir()}
	for k, v := range env {
		base[k] = v
	}
	cfg, err := worker.ConfigFromEnv(func(k string) string { return base[k] })
	require.NoError(t, err)
	p, err := plugin.New(cfg)
	require.NoError(t, err)
	return p
}

func configure(t *testing.T, p *plugin.Plugin, key, queue string) *sdkworker.Options {
	t.Helper()
	o := &sdkworker.Options{}
	require.NoError(t, p.ConfigureWorker(context.Background(), sdkworker.PluginConfigureWorkerOptions{WorkerInstanceKey: key, TaskQueue: queue, WorkerOptions: o}))
	return o
}

// StartWorker registers AgentTask, its activities and agents.Ask's before
// the worker starts; StopWorker stops the worker first, then lets go of the
// storage, so the same worker can start again.
func TestStartAndStopWorkerHooks(t *testing.T) {
	p := newPlugin(t, nil)
	o := configure(t, p, "w1", "agents")
	require.NotZero(t, o.MaxHeartbeatThrottleInterval, "ConfigureWorker sets the heartbeat throttle model calls need")
	require.NotEmpty(t, o.Interceptors, "and the turn tracing interceptor")

	var reg registry
	started := false
	start := func(context.Context, sdkworker.PluginStartWorkerOptions) error { started = true; return nil }
	require.NoError(t, p.StartWorker(context.Background(), sdkworker.PluginStartWorkerOptions{WorkerInstanceKey: "w1", WorkerRegistry: &reg}, start))
	require.True(t, started, "StartWorker calls the next hook")
	require.Equal(t, []string{contract.WorkflowType, "DeleteTask", "RetentionSweep"}, reg.workflows, "AgentTask, deletion and retention")
	for _, name := range []string{"ModelTurn", "DescribeWorker", "WriteEntries", agents.AskActivityName} {
		require.Contains(t, reg.activities, name)
	}

	var order []string
	p.StopWorker(context.Background(), sdkworker.PluginStopWorkerOptions{WorkerInstanceKey: "w1"},
		func(context.Context, sdkworker.PluginStopWorkerOptions) { order = append(order, "worker stopped") })
	require.Equal(t, []string{"worker stopped"}, order, "StopWorker stops the worker through the next hook")

	// Configured and started again, the plugin opens the storage afresh.
	configure(t, p, "w1", "agents")
	var again registry
	require.NoError(t, p.StartWorker(context.Background(), sdkworker.PluginStartWorkerOptions{WorkerInstanceKey: "w1", WorkerRegistry: &again}, start))
	require.Equal(t, reg.workflows, again.workflows)
	require.Equal(t, reg.activities, again.activities)
}

// A worker that fails to start gets its error back, and the plugin lets go
// of what it opened for it (StopWorker is not called then).
func TestStartWorkerThatFailsReturnsItsError(t *testing.T) {
	p := newPlugin(t, nil)
	configure(t, p, "w1", "agents")
	boom := errors.New("the server refused the worker")
	err := p.StartWorker(context.Background(), sdkworker.PluginStartWorkerOptions{WorkerInstanceKey: "w1", WorkerRegistry: &registry{}},
		func(context.Context, sdkworker.PluginStartWorkerOptions) error { return boom })
	require.ErrorIs(t, err, boom)
}

// A worker of another queue, given the plugin directly, is refused with
// the fix; the plugin registers nothing on it.
func TestConfigureWorkerOfAnotherQueue(t *testing.T) {
	p := newPlugin(t, nil)
	err := p.ConfigureWorker(context.Background(), sdkworker.PluginConfigureWorkerOptions{WorkerInstanceKey: "w2", TaskQueue: "billing", WorkerOptions: &sdkworker.Options{}})
	require.ErrorContains(t, err, `"billing"`)
}

// ConfigureClient gives a client the codec's data and failure converters
// when the configuration has codec keys; without keys it leaves them.
func TestConfigureClientHook(t *testing.T) {
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	p := newPlugin(t, map[string]string{"AGENT_CODEC_KEYS": "k1:" + key})
	var o client.Options
	require.NoError(t, p.ConfigureClient(context.Background(), client.PluginConfigureClientOptions{ClientOptions: &o}))
	require.NotNil(t, o.DataConverter, "the codec's data converter")
	require.NotNil(t, o.FailureConverter, "and its failure converter")

	plain := newPlugin(t, nil)
	var po client.Options
	require.NoError(t, plain.ConfigureClient(context.Background(), client.PluginConfigureClientOptions{ClientOptions: &po}))
	require.Nil(t, po.DataConverter, "no keys, no codec")
}

// The replayer path: a replayer given the plugin replays a recorded
// AgentTask history (ConfigureWorkflowReplayer, ReplayWorkflow); without it
// the same history does not replay, the workflow unknown.
func TestReplayerHooks(t *testing.T) {
	gens, err := histories.Generations()
	require.NoError(t, err)
	file := filepath.Join(gens[len(gens)-1], "agent-state-upserts.json")

	withPlugin, err := sdkworker.NewWorkflowReplayerWithOptions(sdkworker.WorkflowReplayerOptions{Plugins: []sdkworker.Plugin{newPlugin(t, nil)}})
	require.NoError(t, err)
	require.NoError(t, histories.Replay(withPlugin, file))

	bare := sdkworker.NewWorkflowReplayer()
	require.Error(t, histories.Replay(bare, file))
}
