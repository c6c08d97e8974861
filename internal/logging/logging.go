// Package logging builds the process's zap logger and adapts it to the
// Temporal SDK, so SDK, workflow and activity lines share one format and the
// SDK's tags (WorkflowID, RunID, ActivityType, ...) become structured fields.
package logging

import (
	"fmt"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Field names every log line of a task carries.
const (
	FieldTaskID = "task_id"
	FieldTurn   = "turn"
)

// The environment of every binary's log (worker and api).
const (
	EnvLevel = "AGENT_LOG_LEVEL" // debug, info, warn, error; default info
	EnvJSON  = "AGENT_LOG_JSON"  // true or 1: JSON lines
)

// FromEnv reads the log level and format from getenv.
func FromEnv(getenv func(string) string) (level string, json bool) {
	level = getenv(EnvLevel)
	if level == "" {
		level = "info"
	}
	return level, getenv(EnvJSON) == "true" || getenv(EnvJSON) == "1"
}

// New returns a production-style logger writing to stderr: JSON when json is
// true, console encoding otherwise, ISO 8601 times. level is one of debug,
// info, warn or error; empty means info.
func New(level string, json bool) (*zap.Logger, error) {
	return NewTo(level, json, "stderr")
}

// NewTo is New writing to path ("stderr", or a file, appended to) instead.
func NewTo(level string, json bool, path string) (*zap.Logger, error) {
	lvl, err := ParseLevel(level)
	if err != nil {
		return nil, err
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	// Sampling keys on the message text, which many tasks share ("turn
	// committed"), so a busy worker would drop lines of arbitrary tasks.
	cfg.Sampling = nil
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	if !json {
		cfg.Encoding = "console"
		cfg.EncoderConfig.EncodeLevel = zapcore.CapitalLevelEncoder
	}
	cfg.OutputPaths, cfg.ErrorOutputPaths = []string{path}, []string{path}
	return cfg.Build()
}

// ParseLevel reads debug, info, warn (or warning) and error, case-insensitively;
// empty means info.
func ParseLevel(s string) (zapcore.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return zapcore.DebugLevel, nil
	case "", "info":
		return zapcore.InfoLevel, nil
	case "warn", "warning":
		return zapcore.WarnLevel, nil
	case "error":
		return zapcore.ErrorLevel, nil
	}
	return zapcore.InfoLevel, fmt.Errorf("logging: unknown level %q (want debug, info, warn or error)", s)
}
