package workerkit

import (
	"context"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/internal/cleanup"
)

// EnvRetention is how long closed tasks' objects are kept
// (cleanup.ParseRetention: a Go duration or days such as 30d; 0 or off
// keeps everything).
const EnvRetention = cleanup.EnvRetention

// Retention schedule upkeep (docs/design.md, Retention): Run makes the
// queue's retention schedule match the worker's Config.Retention once it
// has started, in the background so a Temporal that refuses schedules for a
// while never keeps the worker from serving. A team's worker built on the
// plugin alone calls EnsureRetention itself.

// retentionTries bounds the attempts, retentionTry each attempt.
const (
	retentionTries = 10
	retentionTry   = 30 * time.Second
)

// EnsureRetention makes the retention schedule of cfg.TaskQueue match
// cfg.Retention (created, updated, or deleted when off); a zero
// retention leaves it as it is.
func EnsureRetention(ctx context.Context, c client.Client, cfg Config) error {
	if cfg.Retention == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, retentionTry)
	defer cancel()
	return cleanup.EnsureSchedule(ctx, c, cfg.TaskQueue, cfg.Retention)
}

// keepRetention runs EnsureRetention until it succeeds, at most
// retentionTries times, backing off up to a minute; failures are logged.
func keepRetention(ctx context.Context, c client.Client, cfg Config) {
	pause := time.Second
	for try := 1; ; try++ {
		err := EnsureRetention(ctx, c, cfg)
		if err == nil || ctx.Err() != nil {
			return
		}
		if cfg.Log != nil {
			cfg.Log.Warn("the retention schedule could not be ensured", "schedule", cleanup.ScheduleID(cfg.TaskQueue), "try", try, "error", err)
		}
		if try >= retentionTries {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Minute)
	}
}
