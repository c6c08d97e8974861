package workerkit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkworker "go.temporal.io/sdk/worker"
)

func TestStopTimeout(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

	tu, err := TuningFromEnv(env(nil))
	require.NoError(t, err)
	require.Equal(t, DefaultStopTimeout, tu.StopTimeout, "unset: model calls get 30 s to finish")
	var o sdkworker.Options
	tu.Apply(&o)
	require.Equal(t, DefaultStopTimeout, o.WorkerStopTimeout)

	tu, err = TuningFromEnv(env(map[string]string{EnvStopTimeout: " 2m "}))
	require.NoError(t, err)
	require.Equal(t, 2*time.Minute, tu.StopTimeout)

	tu, err = TuningFromEnv(env(map[string]string{EnvStopTimeout: "0s"}))
	require.NoError(t, err)
	o = sdkworker.Options{}
	tu.Apply(&o)
	require.Zero(t, o.WorkerStopTimeout, "0s: running activities are canceled at once")

	for _, bad := range []string{"30", "-1s", "soon"} {
		_, err = TuningFromEnv(env(map[string]string{EnvStopTimeout: bad}))
		require.ErrorContains(t, err, EnvStopTimeout, bad)
	}

	// A Tuning made in code keeps the SDK's default.
	o = sdkworker.Options{}
	Tuning{}.Apply(&o)
	require.Zero(t, o.WorkerStopTimeout)
}
