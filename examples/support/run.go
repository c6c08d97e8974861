package support

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agenttask/agenttask/plugin"
)

// Run serves the team's workflow, its activity and the agent runtime in
// this process until ctx ends: TriageTicket and the runtime on queue, the
// runtime coming from p alone (added to that worker's options; p may be on
// c too, once is enough), and LookupCustomer on w's tools queue. p's
// Config.TaskQueue must be queue or "".
func (w *Workflows) Run(ctx context.Context, c client.Client, p *plugin.Plugin, queue string) error {
	if queue == "" {
		queue = TaskQueue
	}
	wk := worker.New(c, queue, worker.Options{Plugins: []worker.Plugin{p}})
	tools := worker.New(c, w.toolsQueue(), worker.Options{})
	w.Register(wk, tools)
	if err := wk.Start(); err != nil {
		return fmt.Errorf("starting the %q worker: %w", queue, err)
	}
	defer wk.Stop()
	if err := tools.Start(); err != nil {
		return fmt.Errorf("starting the %q worker: %w", w.toolsQueue(), err)
	}
	defer tools.Stop()
	<-ctx.Done()
	return nil
}
