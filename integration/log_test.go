package integration

import "go.temporal.io/sdk/log"

// logAdapter keeps the test client quiet; workers log through zap.
type logAdapter struct{}

func (logAdapter) Debug(string, ...any) {}
func (logAdapter) Info(string, ...any)  {}
func (logAdapter) Warn(string, ...any)  {}
func (logAdapter) Error(string, ...any) {}

var _ log.Logger = logAdapter{}
