package support

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agenttask/agenttask/plugin"
)

// Queues are the task queues Run serves.
type Queues struct {
	Workflows string // TriageTicket and the runtime; TaskQueue when ""
	Tools     string // LookupCustomer; ToolsQueue when ""
}

// Run serves the team's workflow, its activity and the agent runtime in
// this process until ctx ends: the runtime comes from p alone, added to the
// workflow worker's options. p's Config.TaskQueue must be q.Workflows or "".
func (wfs *Workflows) Run(ctx context.Context, c client.Client, p *plugin.Plugin, q Queues) error {
	if q.Workflows == "" {
		q.Workflows = TaskQueue
	}
	if q.Tools == "" {
		q.Tools = ToolsQueue
	}
	w := worker.New(c, q.Workflows, worker.Options{Plugins: []worker.Plugin{p}})
	tools := worker.New(c, q.Tools, worker.Options{})
	wfs.Register(w, tools)
	if err := w.Start(); err != nil {
		return fmt.Errorf("starting the %q worker: %w", q.Workflows, err)
	}
	defer w.Stop()
	if err := tools.Start(); err != nil {
		return fmt.Errorf("starting the %q worker: %w", q.Tools, err)
	}
	defer tools.Stop()
	<-ctx.Done()
	return nil
}
