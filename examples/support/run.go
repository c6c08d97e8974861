package support

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agenttask/agenttask/plugin"
)

// Run serves the team's workflow, its activity and the agent runtime in
// this process until ctx ends: all of it on one worker of queue, the
// runtime coming from p alone (added to that worker's options; p may be on
// c too, once is enough), or LookupCustomer on a second worker when w
// names a ToolsQueue. p's Config.TaskQueue must be queue or "".
func (w *Workflows) Run(ctx context.Context, c client.Client, p *plugin.Plugin, queue string) error {
	if queue == "" {
		queue = TaskQueue
	}
	wk := worker.New(c, queue, worker.Options{Plugins: []worker.Plugin{p}})
	acts := worker.ActivityRegistry(wk)
	if w.toolsQueue() != "" {
		tools := worker.New(c, w.toolsQueue(), worker.Options{})
		acts = tools
		if err := tools.Start(); err != nil {
			return fmt.Errorf("starting the %q worker: %w", w.toolsQueue(), err)
		}
		defer tools.Stop()
	}
	w.Register(wk, acts)
	if err := wk.Start(); err != nil {
		return fmt.Errorf("starting the %q worker: %w", queue, err)
	}
	defer wk.Stop()
	<-ctx.Done()
	return nil
}
