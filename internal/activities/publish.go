package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/agenttask/agenttask/internal/broker"
)

// PublishEventsName is the local activity by which workflow code hands
// the broker what it alone decides (an approval asked for or decided, a
// budget raised, a turn canceled, the shaping pass's verdict): workflow
// code may do no I/O, and no activity of its own comes next to carry the
// news while a task waits for a person. Named under "agenttask." so that
// no team's activity type can be it.
const PublishEventsName = "agenttask.PublishEvents"

// publishEventsTimeout bounds one PublishEvents: a broker that is away
// delays a workflow task by no more.
const publishEventsTimeout = 2 * time.Second

// PublishEventsInput is the events of one task (TaskID: a run's, or a
// sub-task's), each with its position set by the workflow.
type PublishEventsInput struct {
	TaskID string         `json:"task_id"`
	Events []broker.Event `json:"events"`
}

// PublishEvents appends the events to the task's subject. It never fails:
// streaming is best effort, and a local activity's failure would be the
// workflow's to handle. A worker without a broker publishes nothing. A
// replay does not run it, so nothing is published twice.
func (a *Activities) PublishEvents(ctx context.Context, in PublishEventsInput) error {
	if a.Broker == nil || len(in.Events) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, publishEventsTimeout)
	defer cancel()
	for _, e := range in.Events {
		if _, err := a.Broker.Append(ctx, in.TaskID, e); err != nil {
			activity.GetLogger(ctx).Warn("an event was not streamed: the broker refused", "task_id", in.TaskID, "type", e.Type, "error", err)
			return nil
		}
	}
	return nil
}
