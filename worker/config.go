// Package worker runs the agent runtime as a worker of its own: Config
// (read from the environment by ConfigFromEnv) and Run, a Temporal worker
// of the task queue with the runtime's plugin and nothing else. It is what
// the worker binary (cmd/worker) runs, in a program of your own:
//
//	cfg, err := worker.ConfigFromEnv(os.Getenv)
//	...
//	err = worker.Run(ctx, cfg, temporalClient)
//
// To add the runtime to a worker that also runs your own workflows, use
// package plugin instead: plugin.FromEnv, or plugin.New with a Config.
//
// It is one of the module's public packages, with contract (the contract
// types), starter (the Go client), plugin, agents and agenttest. Everything
// else lives under internal/ and may change in any release.
package worker

import (
	"time"

	"go.temporal.io/sdk/log"

	"github.com/agenttask/agenttask/internal/workerkit"
)

// Environment variables of the worker (Temporal's own connection variables
// are read by the binaries; see docs/configuration.md).
const (
	EnvTaskQueue     = workerkit.EnvTaskQueue
	EnvTranscriptURL = workerkit.EnvTranscriptURL
	EnvDataDir       = workerkit.EnvDataDir
	EnvLogLevel      = workerkit.EnvLogLevel
	EnvLogJSON       = workerkit.EnvLogJSON
	EnvOutputModel   = workerkit.EnvOutputModel // default model of the shaping pass
	EnvRetention     = workerkit.EnvRetention   // how long closed tasks' objects are kept

	// The SDK worker's concurrency (Tuning); unset keeps the SDK's default.
	EnvWorkflowSlots   = workerkit.EnvWorkflowSlots
	EnvActivitySlots   = workerkit.EnvActivitySlots
	EnvWorkflowPollers = workerkit.EnvWorkflowPollers
	EnvActivityPollers = workerkit.EnvActivityPollers
	EnvStickyCache     = workerkit.EnvStickyCache
	EnvStickyTimeout   = workerkit.EnvStickyTimeout
	EnvStopTimeout     = workerkit.EnvStopTimeout

	// Worker Deployment Versioning (Deployment).
	EnvDeploymentName = workerkit.EnvDeploymentName
	EnvBuildID        = workerkit.EnvBuildID
)

// DefaultStopTimeout is how long a stopping worker (SIGINT, SIGTERM) lets
// its running activities, model calls included, finish.
const DefaultStopTimeout = workerkit.DefaultStopTimeout

// DefaultDataDir holds local state (transcripts, the dev server's
// database) when AGENT_DATA_DIR is unset.
const DefaultDataDir = workerkit.DefaultDataDir

// Config is what a worker runs with.
//
// ConfigFromEnv reads it from the environment, and with it the settings
// that have no field here: the model providers (AGENT_MODEL_PROVIDERS and
// the providers' keys), the mounts (AGENT_MOUNTS), the codec keys
// (AGENT_CODEC_KEYS), the MCP servers (AGENT_MCP_SERVERS) and the model
// catalogue (MODEL_CATALOG). The Config it returns carries them: change its
// fields rather than copying them into a new Config, which has none (no
// model provider, no mounts, no encryption).
type Config struct {
	// TaskQueue is the queue the worker serves (AGENT_TASK_QUEUE, default
	// agent-tasks). For a plugin, "" serves every worker it is given.
	TaskQueue string
	// TranscriptURL is where tasks keep their transcripts, a gocloud.dev
	// blob URL: file:///..., s3://..., mem:// (AGENT_TRANSCRIPT_URL;
	// ConfigFromEnv defaults it to a folder under AGENT_DATA_DIR).
	TranscriptURL string
	// LogLevel and LogJSON are the binaries' logging (AGENT_LOG_LEVEL,
	// AGENT_LOG_JSON).
	LogLevel string
	LogJSON  bool
	// OutputModel is the default model of the shaping pass
	// (AGENT_OUTPUT_MODEL); "" none.
	OutputModel string
	// BrokerURL is the NATS server streamed turns publish to
	// (AGENT_NATS_URL); "" runs streamed tasks without streaming them. The
	// broker is optional at run time: the worker starts without it and
	// connects in the background; meanwhile turns run unstreamed.
	BrokerURL string
	// Tuning sizes the SDK worker (AGENT_WORKER_*); zero fields keep the
	// SDK's defaults.
	Tuning Tuning
	// Deployment, when it has a build ID (AGENT_BUILD_ID), makes the worker
	// a version of a Worker Deployment (docs/deploy.md): AgentTask runs
	// pinned to the version that started them, moved to the current one at
	// continue-as-new. The zero value is unversioned.
	Deployment Deployment
	// Retention is how long a closed task's objects are kept
	// (AGENT_RETENTION: a Go duration or days such as 30d, default 30 days;
	// off keeps everything; docs/design.md#retention). 0, as in a Config
	// made in code, leaves the queue's retention schedule as the queue's
	// other workers keep it.
	Retention time.Duration
	// Log, when set, is where Run logs what it does outside workflows and
	// activities (the retention schedule's upkeep).
	Log log.Logger

	// read is what ConfigFromEnv read, the settings above included; the
	// fields above replace its own when the worker starts.
	read workerkit.Config
}

// ConfigFromEnv reads the worker's configuration from the environment
// (docs/configuration.md): unset variables keep their defaults, a bad
// value is an error that names the variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	k, err := workerkit.ConfigFromEnv(getenv)
	if err != nil {
		return Config{}, err
	}
	return Config{
		TaskQueue:     k.TaskQueue,
		TranscriptURL: k.TranscriptURL,
		LogLevel:      k.LogLevel,
		LogJSON:       k.LogJSON,
		OutputModel:   k.OutputModel,
		BrokerURL:     k.BrokerURL,
		Tuning:        Tuning(k.Tuning),
		Deployment:    Deployment(k.Deployment),
		Retention:     k.Retention,
		Log:           k.Log,
		read:          k,
	}, nil
}

// runtime is the implementation's configuration: what ConfigFromEnv read,
// with c's fields in place of its own.
func (c Config) runtime() workerkit.Config {
	k := c.read
	k.TaskQueue = c.TaskQueue
	k.TranscriptURL = c.TranscriptURL
	k.LogLevel = c.LogLevel
	k.LogJSON = c.LogJSON
	k.OutputModel = c.OutputModel
	k.BrokerURL = c.BrokerURL
	k.Tuning = workerkit.Tuning(c.Tuning)
	k.Deployment = workerkit.Deployment(c.Deployment)
	k.Retention = c.Retention
	k.Log = c.Log
	return k
}

// Package plugin makes its plugin from a Config through the conversion
// registered here: it cannot reach the Config's unexported fields.
func init() { workerkit.SetPublic(Config.runtime) }
