// Package worker runs AgentTask workflows and their activities. The worker
// binary (cmd/worker), the dev stack (cmd/agentdev) and the integration
// tests all call Run, so what is tested is what ships.
package worker

import (
	"fmt"

	"gocloud.dev/blob"
	"os"
	"path/filepath"

	"github.com/agenttask/agenttask/broker"
	"github.com/agenttask/agenttask/llm"
	"github.com/agenttask/agenttask/logging"
	"github.com/agenttask/agenttask/mount"
	"github.com/agenttask/agenttask/workflows"
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
)

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
	BrokerURL string

	// WrapMountBucket, when set, wraps every bucket of the agents' mounts
	// (tests inject storage faults with it; never set from the environment).
	WrapMountBucket func(*blob.Bucket) *blob.Bucket
}

// ConfigFromEnv applies environment overrides to the defaults.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{TaskQueue: workflows.DefaultTaskQueue, LogLevel: "info"}
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
	return c, nil
}
