package workerkit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

func TestDeploymentFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

	d, err := DeploymentFromEnv(env(nil))
	require.NoError(t, err)
	require.False(t, d.Versioned(), "nothing set: unversioned, as before")

	d, err = DeploymentFromEnv(env(map[string]string{EnvBuildID: " 7e21d2c "}))
	require.NoError(t, err)
	require.Equal(t, Deployment{Name: DefaultDeploymentName, BuildID: "7e21d2c"}, d, "a build ID alone joins the default deployment")

	d, err = DeploymentFromEnv(env(map[string]string{EnvBuildID: "b1", EnvDeploymentName: "agents-prod"}))
	require.NoError(t, err)
	require.Equal(t, sdkworker.WorkerDeploymentVersion{DeploymentName: "agents-prod", BuildID: "b1"}, d.Version())

	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{EnvDeploymentName: "agents"}, "needs AGENT_BUILD_ID too"},
		{map[string]string{EnvBuildID: "b1", EnvDeploymentName: "agents.prod"}, "must not contain '.' or ':'"},
		{map[string]string{EnvBuildID: "b1", EnvDeploymentName: "agents:prod"}, "must not contain '.' or ':'"},
		{map[string]string{EnvBuildID: "__b1"}, "must not start with"},
		{map[string]string{EnvBuildID: "b 1"}, "must not contain spaces"},
		{map[string]string{EnvBuildID: string(make([]byte, 256))}, "at most 255"},
	} {
		_, err := DeploymentFromEnv(env(c.env))
		require.ErrorContains(t, err, c.want, "%v", c.env)
	}
}

func TestApplyDeployment(t *testing.T) {
	var o sdkworker.Options
	applyDeployment(Deployment{}, &o)
	require.False(t, o.DeploymentOptions.UseVersioning, "unversioned config: options untouched")

	applyDeployment(Deployment{Name: "agents", BuildID: "b1"}, &o)
	require.Equal(t, sdkworker.DeploymentOptions{
		UseVersioning: true, Version: sdkworker.WorkerDeploymentVersion{DeploymentName: "agents", BuildID: "b1"},
		DefaultVersioningBehavior: workflow.VersioningBehaviorPinned,
	}, o.DeploymentOptions)

	// A team's worker that set its own options keeps them.
	own := sdkworker.Options{DeploymentOptions: sdkworker.DeploymentOptions{UseVersioning: true,
		Version: sdkworker.WorkerDeploymentVersion{DeploymentName: "team", BuildID: "t7"}, DefaultVersioningBehavior: workflow.VersioningBehaviorAutoUpgrade}}
	want := own.DeploymentOptions
	applyDeployment(Deployment{Name: "agents", BuildID: "b1"}, &own)
	require.Equal(t, want, own.DeploymentOptions)
}

// The plugin moves AgentTask at continue-as-new on versioned workers only:
// those its Config makes versioned, and a team's worker versioned by its
// own options.
func TestPluginUpgradesOnContinueAsNewWhenVersioned(t *testing.T) {
	upgrades := func(o *sdkworker.Options) bool {
		for _, i := range o.Interceptors {
			if _, ok := i.(*upgradeOnContinueAsNew); ok {
				return true
			}
		}
		return false
	}
	configure := func(cfg Config, o *sdkworker.Options) {
		t.Helper()
		cfg.TranscriptURL = "mem://"
		p, err := NewPlugin(cfg)
		require.NoError(t, err)
		require.NoError(t, p.ConfigureWorker(context.Background(), sdkworker.PluginConfigureWorkerOptions{WorkerInstanceKey: "w", TaskQueue: "q", WorkerOptions: o}))
	}

	plain := &sdkworker.Options{}
	configure(Config{}, plain)
	require.False(t, upgrades(plain), "unversioned: the commands are unchanged")
	require.False(t, plain.DeploymentOptions.UseVersioning)

	versioned := &sdkworker.Options{}
	configure(Config{Deployment: Deployment{Name: "agents", BuildID: "b1"}}, versioned)
	require.True(t, upgrades(versioned))
	require.Equal(t, "b1", versioned.DeploymentOptions.Version.BuildID)

	team := &sdkworker.Options{DeploymentOptions: sdkworker.DeploymentOptions{UseVersioning: true,
		Version: sdkworker.WorkerDeploymentVersion{DeploymentName: "team", BuildID: "t7"}, DefaultVersioningBehavior: workflow.VersioningBehaviorAutoUpgrade}}
	configure(Config{}, team)
	require.True(t, upgrades(team), "a team's versioned worker moves AgentTask too")
	require.Equal(t, "t7", team.DeploymentOptions.Version.BuildID)
}
