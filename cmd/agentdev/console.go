package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/agenttask/agenttask/internal/logging"
)

// What `make run` shows a person: the banner (addresses, keys, mounts), the
// demo conversation as one reads it, then one short line per turn of any
// task. The structured logs go to a file under the data folder, unless
// AGENT_LOG_LEVEL or --log-console asks for them on the console.

// logFileName is the structured log's file in the data folder.
const logFileName = "agentdev.log"

// consoleLogs is where the stack's structured logs go.
type consoleLogs struct {
	file string // "" : on stderr, as every other binary logs
}

// logsFor decides from the flag and the environment.
func logsFor(dataDir string, toConsole bool) (consoleLogs, error) {
	if toConsole || os.Getenv(logging.EnvLevel) != "" {
		return consoleLogs{}, nil
	}
	p, err := filepath.Abs(filepath.Join(dataDir, logFileName))
	if err != nil {
		return consoleLogs{}, err
	}
	return consoleLogs{file: p}, nil
}

// logger is the stack's logger at level: to the file, with the turn lines
// on out; or to stderr.
func (l consoleLogs) logger(level string, json bool, out io.Writer) (*zap.Logger, error) {
	if l.file == "" {
		return logging.New(level, json)
	}
	z, err := logging.NewTo(level, json, l.file)
	if err != nil {
		return nil, err
	}
	lines := &turnLines{w: out, mu: &sync.Mutex{}}
	return z.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return zapcore.NewTee(c, lines) })), nil
}

// serverLogger is the embedded server's logger (warnings and errors).
func (l consoleLogs) serverLogger() (*zap.Logger, error) {
	if l.file == "" {
		return stderrLogger("warn")
	}
	return logging.NewTo("warn", false, l.file)
}

// banner line of the logs' place.
func (l consoleLogs) banner() string {
	if l.file == "" {
		return ""
	}
	return fmt.Sprintf("Logs:              %s (structured; --log-console or %s=info shows them here)\n", l.file, logging.EnvLevel)
}

// turnLines is a zap core that prints one short line for each turn's end
// (and a task's end), from the runtime's own log entries: "turn answered",
// "turn canceled…", "task completed", "task failed".
type turnLines struct {
	w      io.Writer
	mu     *sync.Mutex
	fields []zapcore.Field
}

// turnEvents are the entries shown, and how they read.
var turnEvents = map[string]string{
	"turn answered": "answered",
	"turn canceled; its inputs stay committed": "canceled",
	"task completed":          "task completed",
	"task failed":             "task failed",
	"awaiting a budget raise": "awaiting a budget raise",
}

func (c *turnLines) Enabled(l zapcore.Level) bool { return l >= zapcore.InfoLevel }

func (c *turnLines) With(fs []zapcore.Field) zapcore.Core {
	return &turnLines{w: c.w, mu: c.mu, fields: append(append([]zapcore.Field(nil), c.fields...), fs...)}
}

func (c *turnLines) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if _, ok := turnEvents[e.Message]; ok && c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *turnLines) Write(e zapcore.Entry, fs []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range append(append([]zapcore.Field(nil), c.fields...), fs...) {
		f.AddTo(enc)
	}
	get := func(k string) string {
		if v, ok := enc.Fields[k]; ok {
			return fmt.Sprint(v)
		}
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %s", e.Time.Local().Format(time.TimeOnly), get(logging.FieldTaskID))
	if turn := get(logging.FieldTurn); turn != "" {
		fmt.Fprintf(&b, " · turn %s", turn)
	}
	fmt.Fprintf(&b, " · %s", turnEvents[e.Message])
	for _, k := range []string{"stop_reason", "ended_by", "type"} {
		if v := get(k); v != "" {
			fmt.Fprintf(&b, " (%s)", v)
		}
	}
	if v := get("error"); v != "" {
		fmt.Fprintf(&b, ": %s", v)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := fmt.Fprintln(c.w, b.String())
	return err
}

func (c *turnLines) Sync() error { return nil }
