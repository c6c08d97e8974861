package worker

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/internal/workerkit"
)

// Run serves cfg.TaskQueue until ctx is done: a worker of c with the
// runtime's plugin and nothing else (what plugin.New gives a worker of your
// own), and the queue's retention schedule kept to cfg.Retention in the
// background.
func Run(ctx context.Context, cfg Config, c client.Client) error {
	return workerkit.Run(ctx, cfg.runtime(), c)
}

// EnsureRetention makes the retention schedule of cfg.TaskQueue match
// cfg.Retention (created, updated, or deleted when off); a zero retention
// leaves it as it is. Run does it; a worker of your own built on the plugin
// calls it once it has started (a plugin holds no client).
func EnsureRetention(ctx context.Context, c client.Client, cfg Config) error {
	return workerkit.EnsureRetention(ctx, c, cfg.runtime())
}
