package workerkit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
)

func TestNewPluginNeedsATranscriptStore(t *testing.T) {
	_, err := NewPlugin(Config{TaskQueue: "q"})
	require.ErrorContains(t, err, EnvTranscriptURL)
}

// The plugin serves its own queue's worker; given to another queue's worker
// directly it says how to fix it; reached through a client, it skips it.
func TestPluginServesItsQueue(t *testing.T) {
	p, err := NewPlugin(Config{TaskQueue: "agents", TranscriptURL: "mem://"})
	require.NoError(t, err)
	configure := func(queue, key string) error {
		return p.ConfigureWorker(context.Background(), sdkworker.PluginConfigureWorkerOptions{
			WorkerInstanceKey: key, TaskQueue: queue, WorkerOptions: &sdkworker.Options{}})
	}
	require.NoError(t, configure("agents", "w1"))
	require.ErrorContains(t, configure("other", "w2"), `set Config.TaskQueue to "other"`)
	require.NoError(t, p.ConfigureClient(context.Background(), client.PluginConfigureClientOptions{ClientOptions: &client.Options{}}))
	require.NoError(t, configure("other", "w3"))
	require.NotContains(t, p.queues, "w3")

	o := &sdkworker.Options{}
	require.NoError(t, p.ConfigureWorker(context.Background(), sdkworker.PluginConfigureWorkerOptions{WorkerInstanceKey: "w4", TaskQueue: "agents", WorkerOptions: o}))
	require.NoError(t, p.ConfigureWorker(context.Background(), sdkworker.PluginConfigureWorkerOptions{WorkerInstanceKey: "w4", TaskQueue: "agents", WorkerOptions: o}))
	require.Len(t, o.Interceptors, 1, "given twice, configured once")
	require.NotZero(t, o.MaxHeartbeatThrottleInterval)

	anyQueue, err := NewPlugin(Config{TranscriptURL: "mem://"})
	require.NoError(t, err)
	require.NoError(t, anyQueue.ConfigureWorker(context.Background(), sdkworker.PluginConfigureWorkerOptions{WorkerInstanceKey: "x", TaskQueue: "whatever", WorkerOptions: &sdkworker.Options{}}))
}
