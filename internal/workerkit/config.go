// Package workerkit is the worker's implementation: the configuration with
// every knob (the model router, the mounts, the broker, the metrics, the
// codec, the MCP servers, the catalogue), the Temporal plugin that
// registers AgentTask and its activities and opens and closes their
// storage, Register, the transcript adapter and the `messages` query's
// reader, and Run.
//
// The module's binaries (cmd/worker, cmd/agentdev), the integration tests,
// the benchmarks and package agenttest use it directly. Teams use its two
// public faces, which wrap it with types of their own: package plugin (the
// plugin for their worker) and package worker (Config, ConfigFromEnv, Run).
// The worker binary and a team's worker run the same Plugin, so what is
// tested is what ships.
package workerkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/log"
	"gocloud.dev/blob"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/a2a"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/catalog"
	"github.com/agenttask/agenttask/internal/cleanup"
	"github.com/agenttask/agenttask/internal/codec"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/logging"
	"github.com/agenttask/agenttask/internal/mcp"
	"github.com/agenttask/agenttask/internal/mount"
)

// Environment variables of the worker (Temporal's own connection variables
// are read by package connect).
const (
	EnvTaskQueue     = "AGENT_TASK_QUEUE"
	EnvTranscriptURL = "AGENT_TRANSCRIPT_URL"
	EnvDataDir       = "AGENT_DATA_DIR"
	EnvLogLevel      = logging.EnvLevel
	EnvLogJSON       = logging.EnvJSON
	EnvOutputModel   = "AGENT_OUTPUT_MODEL" // default model of the shaping pass

	// The SDK worker's concurrency (Tuning); unset keeps the SDK's default.
	EnvWorkflowSlots   = "AGENT_WORKER_WORKFLOW_SLOTS"
	EnvActivitySlots   = "AGENT_WORKER_ACTIVITY_SLOTS"
	EnvWorkflowPollers = "AGENT_WORKER_WORKFLOW_POLLERS"
	EnvActivityPollers = "AGENT_WORKER_ACTIVITY_POLLERS"
	EnvStickyCache     = "AGENT_WORKER_STICKY_CACHE"
	EnvStickyTimeout   = "AGENT_WORKER_STICKY_TIMEOUT"
	EnvStopTimeout     = "AGENT_WORKER_STOP_TIMEOUT"
)

// DefaultStopTimeout is how long a stopping worker (SIGINT, SIGTERM) lets
// its running activities, model calls included, finish.
const DefaultStopTimeout = 30 * time.Second

// DefaultDataDir holds local state (transcripts, the dev server's database); git-ignored.
const DefaultDataDir = "data"

// Config is everything the worker reads from its environment, once.
type Config struct {
	TaskQueue     string
	TranscriptURL string // gocloud.dev blob URL: file:///..., s3://..., mem://
	Models        llm.RouterOptions
	LogLevel      string
	LogJSON       bool
	OutputModel   string // default model of the shaping pass; "" none
	// Mounts is the storage agents may name (AGENT_MOUNTS); none when unset.
	Mounts mount.Mounts
	// BrokerURL is the NATS server streamed turns publish to
	// (AGENT_NATS_URL); "" runs streamed tasks without streaming them.
	// The broker is optional at run time: Run starts without it and
	// connects in the background (broker.Start); meanwhile turns run
	// unstreamed.
	BrokerURL string
	// Broker, when set, is the broker turns stream through, in place of
	// one Run starts for BrokerURL; its owner closes it (cmd/worker, which
	// logs it going on and off and reports it on /healthz).
	Broker *broker.Broker

	// Tuning sizes the SDK worker (AGENT_WORKER_*); zero fields keep the
	// SDK's defaults.
	Tuning Tuning

	// Metrics records the activities' metrics (model calls, tokens,
	// retries, shaping attempts); nil records none. The caller that makes
	// the worker's Temporal client gives it its MetricsHandler from the same
	// registry (telemetry.Setup, AGENT_METRICS_ADDR).
	Metrics activities.Metrics

	// Codec, when set (AGENT_CODEC_KEYS), encrypts the transcript store's
	// objects. The worker's Temporal client must encrypt payloads with the
	// same keys (connect.Options does when the variables are set; see
	// codec.Apply).
	Codec *codec.Codec

	// MCPServers are the MCP servers agents may name in capabilities of
	// kind mcp (AGENT_MCP_SERVERS and each server's header variables;
	// docs/mcp.md); none when unset.
	MCPServers mcp.Servers

	// A2AAgents are the remote A2A agents agents may name in capabilities
	// of kind a2a (AGENT_A2A_AGENTS and each agent's token variables;
	// docs/a2a.md); none when unset.
	A2AAgents a2a.Agents

	// Deployment, when it has a build ID (AGENT_BUILD_ID), makes the worker
	// a version of a Worker Deployment (deployment.go, docs/deploy.md):
	// AgentTask runs pinned to the version that started them, moved to the
	// current one at continue-as-new. The zero value is unversioned.
	Deployment Deployment

	// Retention is how long a closed task's objects are kept
	// (AGENT_RETENTION, cleanup.DefaultRetention when unset; retention.go,
	// docs/design.md): RetentionSweep, started by the queue's retention
	// schedule, removes them after it. cleanup.RetentionOff
	// (AGENT_RETENTION=off) is off: Run deletes the schedule. 0, as in a
	// Config made in code, leaves the schedule as the queue's other
	// workers keep it (a sweep this worker runs judges by the schedule's
	// retention), so an embedded or benchmark worker never turns it off.
	Retention time.Duration
	// Log, when set, is where Run logs what it does outside workflows and
	// activities (the retention schedule's upkeep).
	Log log.Logger

	// Catalog prices the model calls of tasks with a budget (MODEL_CATALOG,
	// the file the Tasks API reads too; nil: the built-in catalogue).
	Catalog *catalog.Catalog

	// MaxAgentDepth bounds the depth of agent trees (AGENT_MAX_AGENT_DEPTH,
	// 1 to contract.MaxAgentDepth; 0: contract.DefaultAgentDepth): a root
	// task whose delegate capabilities nest deeper is refused at start.
	MaxAgentDepth int

	// WrapMountBucket, when set, wraps every bucket of the agents' mounts
	// (tests inject storage faults with it; never set from the environment).
	WrapMountBucket func(*blob.Bucket) *blob.Bucket
}

// ConfigFromEnv applies environment overrides to the defaults.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{TaskQueue: contract.DefaultTaskQueue, LogLevel: "info"}
	if v := getenv(EnvTaskQueue); v != "" {
		c.TaskQueue = v
	}
	c.TranscriptURL = getenv(EnvTranscriptURL)
	if c.TranscriptURL == "" {
		dir := getenv(EnvDataDir)
		if dir == "" {
			dir = DefaultDataDir
		}
		abs, err := filepath.Abs(filepath.Join(dir, "transcripts"))
		if err != nil {
			return c, err
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return c, fmt.Errorf("transcript folder: %w", err)
		}
		c.TranscriptURL = "file://" + filepath.ToSlash(abs)
	}
	models, err := llm.RouterOptionsFromEnv(getenv)
	if err != nil {
		return c, err
	}
	c.Models = models
	c.LogLevel, c.LogJSON = logging.FromEnv(getenv)
	c.OutputModel = getenv(EnvOutputModel)
	if c.Mounts, err = mount.ParseMounts(getenv(mount.EnvMounts)); err != nil {
		return c, err
	}
	c.BrokerURL = getenv(broker.EnvURL)
	if c.Tuning, err = TuningFromEnv(getenv); err != nil {
		return c, err
	}
	if c.Codec, err = codec.FromGetenv(getenv); err != nil {
		return c, err
	}
	if c.MCPServers, err = mcp.ServersFromEnv(getenv); err != nil {
		return c, err
	}
	if c.A2AAgents, err = a2a.AgentsFromEnv(getenv); err != nil {
		return c, err
	}
	if c.Deployment, err = DeploymentFromEnv(getenv); err != nil {
		return c, err
	}
	if c.Retention, err = cleanup.ParseRetention(getenv(EnvRetention)); err != nil {
		return c, err
	}
	if c.Catalog, err = catalog.FromEnv(getenv); err != nil {
		return c, err
	}
	if v := getenv(EnvMaxAgentDepth); v != "" {
		if c.MaxAgentDepth, err = strconv.Atoi(v); err != nil || c.MaxAgentDepth < 1 || c.MaxAgentDepth > contract.MaxAgentDepth {
			return c, fmt.Errorf("%s: %q must be a number of agents from 1 to %d (a task's own included)", EnvMaxAgentDepth, v, contract.MaxAgentDepth)
		}
	}
	return c, nil
}

// EnvMaxAgentDepth names Config.MaxAgentDepth's variable.
const EnvMaxAgentDepth = "AGENT_MAX_AGENT_DEPTH"

// Tuning is the SDK worker's concurrency. A zero field keeps the SDK's
// default, given beside each field (Go SDK v1.50).
type Tuning struct {
	// WorkflowSlots: workflow tasks run at once
	// (MaxConcurrentWorkflowTaskExecutionSize, default 1000).
	WorkflowSlots int
	// ActivitySlots: activities run at once, model calls included
	// (MaxConcurrentActivityExecutionSize, default 1000).
	ActivitySlots int
	// WorkflowPollers: long polls for workflow tasks, shared between the
	// normal and the sticky queue (MaxConcurrentWorkflowTaskPollers, default 2).
	WorkflowPollers int
	// ActivityPollers: long polls for activity tasks
	// (MaxConcurrentActivityTaskPollers, default 2).
	ActivityPollers int
	// StickyCache: workflows kept in memory between workflow tasks, for the
	// whole process (worker.SetStickyWorkflowCacheSize, default 10000). A
	// workflow evicted from it replays its history at its next task.
	StickyCache int
	// StickyTimeout: how long a workflow task waits on this worker's own
	// (sticky) queue before the server hands it to the task queue's other
	// workers (StickyScheduleToStartTimeout, default 5s). A worker that
	// falls further behind than that sees its tasks time out and come back
	// with the whole history, which costs more work still.
	StickyTimeout time.Duration
	// StopTimeout: how long a stopping worker lets its running activities
	// finish before canceling them (WorkerStopTimeout; AGENT_WORKER_STOP_TIMEOUT,
	// DefaultStopTimeout when unset; zero, as in a Tuning made in code, keeps
	// the SDK's 0: cancel at once). Activities learn of the stop at once
	// (activity.GetWorkerStopChannel) and are canceled when it ends.
	StopTimeout time.Duration
}

// TuningFromEnv reads the AGENT_WORKER_* variables: each, when set, a
// positive integer (the SDK refuses 1 for the workflow slots and pollers,
// which alternate between the normal and the sticky queue), or a duration
// for the sticky timeout.
func TuningFromEnv(getenv func(string) string) (Tuning, error) {
	var t Tuning
	for _, f := range []struct {
		env  string
		into *int
		min  int
	}{
		{EnvWorkflowSlots, &t.WorkflowSlots, 2},
		{EnvActivitySlots, &t.ActivitySlots, 1},
		{EnvWorkflowPollers, &t.WorkflowPollers, 2},
		{EnvActivityPollers, &t.ActivityPollers, 1},
		{EnvStickyCache, &t.StickyCache, 1},
	} {
		v := strings.TrimSpace(getenv(f.env))
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < f.min {
			return t, fmt.Errorf("%s=%q: want an integer of at least %d, or unset for the SDK's default", f.env, v, f.min)
		}
		*f.into = n
	}
	if v := strings.TrimSpace(getenv(EnvStickyTimeout)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return t, fmt.Errorf("%s=%q: want a Go duration of at least 1s (such as 30s or 1m), or unset for the SDK's 5s", EnvStickyTimeout, v)
		}
		t.StickyTimeout = d
	}
	t.StopTimeout = DefaultStopTimeout
	if v := strings.TrimSpace(getenv(EnvStopTimeout)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return t, fmt.Errorf("%s=%q: want a Go duration such as 30s or 2m (0s cancels running activities at once), or unset for %s", EnvStopTimeout, v, DefaultStopTimeout)
		}
		t.StopTimeout = d
	}
	return t, nil
}
