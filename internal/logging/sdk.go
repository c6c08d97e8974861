package logging

import (
	"fmt"

	"go.temporal.io/sdk/log"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Compile-time checks: the SDK uses With and WithCallerSkip when present, and
// otherwise wraps the logger itself, losing structured fields and callers.
var (
	_ log.Logger          = (*sdkLogger)(nil)
	_ log.WithLogger      = (*sdkLogger)(nil)
	_ log.WithSkipCallers = (*sdkLogger)(nil)
)

// missingValue stands in for the value of a trailing key without one.
const missingValue = "MISSING"

type sdkLogger struct{ z *zap.Logger }

// NewSDKLogger adapts z to the Temporal SDK's log.Logger. Key/value pairs
// become zap fields; a value that is an error is encoded as zap.Error does.
func NewSDKLogger(z *zap.Logger) log.Logger {
	// Skip the adapter's two frames (level method and write) so the reported
	// caller is the code that logged.
	return &sdkLogger{z: z.WithOptions(zap.AddCallerSkip(2))}
}

func (l *sdkLogger) Debug(msg string, keyvals ...any) { l.write(zapcore.DebugLevel, msg, keyvals) }
func (l *sdkLogger) Info(msg string, keyvals ...any)  { l.write(zapcore.InfoLevel, msg, keyvals) }
func (l *sdkLogger) Warn(msg string, keyvals ...any)  { l.write(zapcore.WarnLevel, msg, keyvals) }
func (l *sdkLogger) Error(msg string, keyvals ...any) { l.write(zapcore.ErrorLevel, msg, keyvals) }

// write must be called directly from the level methods: NewSDKLogger's caller
// skip counts exactly these two frames.
func (l *sdkLogger) write(lvl zapcore.Level, msg string, keyvals []any) {
	// Check first so disabled levels cost no field conversion.
	if ce := l.z.Check(lvl, msg); ce != nil {
		ce.Write(fields(keyvals)...)
	}
}

// With returns a child logger whose lines all carry keyvals.
func (l *sdkLogger) With(keyvals ...any) log.Logger {
	return &sdkLogger{z: l.z.With(fields(keyvals)...)}
}

// WithCallerSkip returns a child logger that reports a caller depth frames higher.
func (l *sdkLogger) WithCallerSkip(depth int) log.Logger {
	return &sdkLogger{z: l.z.WithOptions(zap.AddCallerSkip(depth))}
}

// fields turns SDK key/value pairs into zap fields without ever panicking:
// a zap.Field passed as a key is kept as is, a non-string key is formatted,
// and a trailing key gets the value "MISSING".
func fields(keyvals []any) []zap.Field {
	if len(keyvals) == 0 {
		return nil
	}
	fs := make([]zap.Field, 0, (len(keyvals)+1)/2)
	for i := 0; i < len(keyvals); i++ {
		if f, ok := keyvals[i].(zap.Field); ok {
			fs = append(fs, f)
			continue
		}
		key, ok := keyvals[i].(string)
		if !ok {
			key = fmt.Sprint(keyvals[i])
		}
		if i+1 == len(keyvals) {
			fs = append(fs, zap.String(key, missingValue))
			break
		}
		i++
		switch v := keyvals[i].(type) {
		case error:
			fs = append(fs, zap.NamedError(key, v))
		default:
			fs = append(fs, zap.Any(key, v))
		}
	}
	return fs
}
