package devserver

import (
	"go.temporal.io/server/common/log"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// serverLogger adapts zl to the server's logger, dropping entries below level.
// A level lower than zl's own cannot be lowered further and is ignored.
func serverLogger(zl *zap.Logger, level string) log.Logger {
	lvl, _ := zapcore.ParseLevel(level) // validated in withDefaults
	zl = zl.Named("temporal").WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		if raised, err := zapcore.NewIncreaseLevelCore(c, lvl); err == nil {
			return raised
		}
		return c
	}))
	return log.NewZapLogger(zl)
}
