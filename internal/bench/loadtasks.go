package main

import (
	"context"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// A side's workflows once it has run: their histories sampled, and ended.

// timedOutTasks counts the WorkflowTaskTimedOut events in the histories of
// every tenth workflow that started.
func timedOutTasks(ctx context.Context, c client.Client, ids []string, started []bool) (sampled, timedOut int) {
	var mu sync.Mutex
	var sample []string
	for i := 0; i < len(ids); i += 10 {
		if started[i] {
			sample = append(sample, ids[i])
		}
	}
	parallel(len(sample), 10, func(i int) {
		n := 0
		it := c.GetWorkflowHistory(ctx, sample[i], "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				break
			}
			if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT {
				n++
			}
		}
		mu.Lock()
		timedOut += n
		mu.Unlock()
	})
	return len(sample), timedOut
}

// retryQuery repeats a readiness query until it answers: a query sent
// before the workflow's first workflow task has completed can fail.
func retryQuery(ctx context.Context, q func(context.Context) error) error {
	for {
		err := q(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// terminateAll ends a side's workflows (AgentTask's are idle conversations;
// closing each would cost one more workflow task, which measures nothing).
func terminateAll(c client.Client, ids []string) {
	parallel(len(ids), loadStartParallel, func(i int) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.TerminateWorkflow(ctx, ids[i], "", "bench load done")
	})
}
