package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/mount"
)

// An agent's mount is storage the operator listed (AGENT_MOUNTS), named by
// its name or by an equal URL: whoever starts a task never points the
// workers' credentials at storage of their choosing. The workflow learns the
// list through DescribeWorker (workflow code reads no configuration) and
// refuses the task before any other activity runs; the activities refuse
// unlisted storage again on every use.

// describeWorker learns the worker's configuration once per run (kept in
// o; namedTimers: rules.namedTimers, the call's summary).
func describeWorker(ctx workflow.Context, o *opening, namedTimers bool) (*activities.WorkerDescription, error) {
	if d := o.knownWorker(); d != nil {
		return d, nil
	}
	var d activities.WorkerDescription
	opts := describeOptions
	if namedTimers {
		opts.Summary = "describe the worker: its mounts, providers and MCP servers"
	}
	actx := workflow.WithActivityOptions(ctx, opts)
	if err := workflow.ExecuteActivity(actx, activities.DescribeWorkerName).Get(ctx, &d); err != nil {
		return nil, unwrapActivityError(err)
	}
	o.learnWorker(&d)
	return &d, nil
}

// checkMounts refuses a new task whose agent, or an agent it delegates to,
// names storage the worker does not list.
func (t *task) checkMounts(ctx workflow.Context) error {
	if !t.rules.listedMounts || t.durable.run() > 1 {
		return nil // checked when the task started
	}
	if len(mountsOf("agent", t.args.Agent)) == 0 {
		return nil
	}
	d, err := describeWorker(ctx, &t.opening, t.rules.namedTimers)
	if err != nil {
		return err
	}
	return CheckMounts(t.args.Agent, d.Mounts)
}

// CheckMounts refuses an agent whose mount, or a delegated agent's, is not
// in allowed (the workers' AGENT_MOUNTS). The starter calls it too.
func CheckMounts(agent contract.AgentSpec, allowed mount.Mounts) error {
	for _, s := range mountsOf("agent", agent) {
		if _, err := allowed.Resolve(s.path, *s.spec); err != nil {
			return err
		}
	}
	return nil
}

type mountAt struct {
	path string
	spec *contract.MountSpec
}

// mountsOf lists the mounts of an agent and of the agents it delegates to.
func mountsOf(path string, a contract.AgentSpec) []mountAt {
	var out []mountAt
	if a.Mount != nil {
		out = append(out, mountAt{path + ".mount", a.Mount})
	}
	for i, c := range a.Capabilities {
		if c.Agent != nil {
			out = append(out, mountsOf(fmt.Sprintf("%s.capabilities[%d].agent", path, i), *c.Agent)...)
		}
	}
	return out
}
