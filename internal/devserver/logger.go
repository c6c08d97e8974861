package devserver

import (
	"go.temporal.io/server/common/log"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// serverLogger adapts zl to the server's logger, dropping entries below min.
// zap's caller is turned off: it would always name the server's logging
// wrapper, and the server adds the real call site as "logging-call-at".
func serverLogger(zl *zap.Logger, min zap.AtomicLevel) log.Logger {
	zl = zl.Named("temporal").WithOptions(zap.WithCaller(false), zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return levelFilter{Core: c, min: min}
	}))
	return log.NewZapLogger(zl)
}

// levelFilter passes entries at or above min to Core. min is atomic so Stop
// can silence the expected connection warnings of a shutdown.
type levelFilter struct {
	zapcore.Core
	min zap.AtomicLevel
}

func (f levelFilter) Enabled(l zapcore.Level) bool {
	return f.min.Enabled(l) && f.Core.Enabled(l)
}

func (f levelFilter) With(fields []zapcore.Field) zapcore.Core {
	return levelFilter{Core: f.Core.With(fields), min: f.min}
}

func (f levelFilter) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if !f.min.Enabled(e.Level) {
		return ce
	}
	return f.Core.Check(e, ce)
}
