package cleanup

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/internal/activities"
)

// Registry is where Register registers (workerkit.Registry's methods).
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register registers DeleteTask and its activities under their API names,
// on the worker of the runtime's queue (the one that has the storage).
// DeleteTask upgrades on a versioned worker: it is short, and a deletion
// left pinned to a retired version would never finish.
func Register(r Registry, a *Activities) {
	r.RegisterWorkflowWithOptions(DeleteTask, workflow.RegisterOptions{Name: DeleteTaskName, VersioningBehavior: workflow.VersioningBehaviorAutoUpgrade})
	r.RegisterActivityWithOptions(a.PurgeTaskObjects, activity.RegisterOptions{Name: PurgeTaskObjectsName})
	r.RegisterActivityWithOptions(a.FindSubTasks, activity.RegisterOptions{Name: activities.FindSubTasksName})
	r.RegisterActivityWithOptions(a.TerminateTask, activity.RegisterOptions{Name: activities.TerminateTaskName})
	r.RegisterActivityWithOptions(a.DeleteExecutions, activity.RegisterOptions{Name: activities.DeleteExecutionsName})
}
