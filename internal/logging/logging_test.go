package logging

import (
	"errors"
	"path/filepath"
	"runtime"
	"testing"

	"go.temporal.io/sdk/log"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// The SDK only uses these optional interfaces when they are implemented.
var (
	_ log.WithLogger      = NewSDKLogger(zap.NewNop()).(log.WithLogger)
	_ log.WithSkipCallers = NewSDKLogger(zap.NewNop()).(log.WithSkipCallers)
)

func observed(lvl zapcore.Level) (log.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(lvl)
	return NewSDKLogger(zap.New(core, zap.AddCaller())), logs
}

func only(t *testing.T, logs *observer.ObservedLogs) observer.LoggedEntry {
	t.Helper()
	all := logs.TakeAll()
	if len(all) != 1 {
		t.Fatalf("got %d entries, want 1: %+v", len(all), all)
	}
	return all[0]
}

func TestFieldsFromWithAndKeyvals(t *testing.T) {
	l, logs := observed(zapcore.DebugLevel)
	wl := log.With(l, "WorkflowID", "wf-1", FieldTaskID, "task-9")
	wl = log.With(wl, "RunID", "run-1")
	boom := errors.New("boom")
	wl.Warn("hello", FieldTurn, 3, "Error", boom, "dur", 1.5)

	e := only(t, logs)
	if e.Message != "hello" || e.Level != zapcore.WarnLevel {
		t.Fatalf("entry = %q at %v", e.Message, e.Level)
	}
	got := e.ContextMap()
	want := map[string]any{
		"WorkflowID": "wf-1", FieldTaskID: "task-9", "RunID": "run-1",
		FieldTurn: int64(3), "Error": "boom", "dur": 1.5,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("field %s = %#v, want %#v (all: %v)", k, got[k], v, got)
		}
	}
	for _, f := range e.Context {
		if f.Key == "Error" && f.Type != zapcore.ErrorType {
			t.Errorf("error value encoded as %v, want ErrorType", f.Type)
		}
	}
}

func TestOddKeyvals(t *testing.T) {
	l, logs := observed(zapcore.DebugLevel)
	l.Info("odd", "a", 1, "trailing")
	l.Info("nonstring key", 42, "v", zap.String("z", "field"))
	l.Info("only key", "k")

	all := logs.TakeAll()
	if len(all) != 3 {
		t.Fatalf("got %d entries", len(all))
	}
	if m := all[0].ContextMap(); m["a"] != int64(1) || m["trailing"] != missingValue {
		t.Errorf("odd keyvals: %v", m)
	}
	if m := all[1].ContextMap(); m["42"] != "v" || m["z"] != "field" {
		t.Errorf("non-string key / zap.Field: %v", m)
	}
	if m := all[2].ContextMap(); m["k"] != missingValue {
		t.Errorf("lone key: %v", m)
	}
}

func TestLevelsAndDisabled(t *testing.T) {
	l, logs := observed(zapcore.InfoLevel)
	l.Debug("hidden", "k", "v")
	l.Info("i")
	l.Warn("w")
	l.Error("e")
	var lv []zapcore.Level
	for _, e := range logs.TakeAll() {
		lv = append(lv, e.Level)
	}
	want := []zapcore.Level{zapcore.InfoLevel, zapcore.WarnLevel, zapcore.ErrorLevel}
	if len(lv) != len(want) {
		t.Fatalf("levels = %v, want %v", lv, want)
	}
	for i := range want {
		if lv[i] != want[i] {
			t.Fatalf("levels = %v, want %v", lv, want)
		}
	}
}

// above returns the file and line of the statement just before its caller.
func above() (string, int) {
	_, file, line, _ := runtime.Caller(1)
	return filepath.Base(file), line - 1
}

func checkCaller(t *testing.T, e observer.LoggedEntry, file string, line int) {
	t.Helper()
	if !e.Caller.Defined {
		t.Fatal("caller not recorded")
	}
	if got := filepath.Base(e.Caller.File); got != file || e.Caller.Line != line {
		t.Errorf("caller = %s:%d, want %s:%d", got, e.Caller.Line, file, line)
	}
}

// logVia stands for an SDK wrapper one frame above the real call site.
func logVia(l log.Logger, msg string) { log.Skip(l, 1).Info(msg) }

func TestCallerSkip(t *testing.T) {
	l, logs := observed(zapcore.DebugLevel)

	l.Info("direct")
	file, line := above()
	checkCaller(t, only(t, logs), file, line)

	log.With(l, "k", "v").Error("with")
	file, line = above()
	checkCaller(t, only(t, logs), file, line)

	logVia(l, "skipped")
	file, line = above()
	checkCaller(t, only(t, logs), file, line)

	// The SDK's replay logger wraps a With logger and skips one frame; the
	// result must still point at whoever called the wrapper.
	logVia(log.With(l, "WorkflowID", "w"), "with then skip")
	file, line = above()
	e := only(t, logs)
	checkCaller(t, e, file, line)
	if e.ContextMap()["WorkflowID"] != "w" {
		t.Errorf("With field lost after skip: %v", e.ContextMap())
	}
}

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		level string
		want  zapcore.Level
	}{
		{"", zapcore.InfoLevel},
		{"debug", zapcore.DebugLevel},
		{"INFO", zapcore.InfoLevel},
		{"warn", zapcore.WarnLevel},
		{"error", zapcore.ErrorLevel},
	} {
		for _, json := range []bool{false, true} {
			z, err := New(tc.level, json)
			if err != nil {
				t.Fatalf("New(%q, %v): %v", tc.level, json, err)
			}
			if !z.Core().Enabled(tc.want) || (tc.want > zapcore.DebugLevel && z.Core().Enabled(tc.want-1)) {
				t.Errorf("New(%q): wrong level", tc.level)
			}
		}
	}
	if _, err := New("verbose", false); err == nil {
		t.Error("New accepted an unknown level")
	}
}
