package cleanup

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/internal/blobkey"
	"github.com/agenttask/agenttask/internal/transcript"
)

// Sweeper holds the retention sweep's activity: it lists the worker's
// transcript store, which outlives Temporal's records of a task, so a task
// whose execution and visibility record Temporal's own retention removed
// is still found (and dated by its objects).
// MaxSealsPerPage bounds the seals (each a query, up to sealQueryTimeout)
// one page makes: 10 of 20 s stay well within the page's 10 minutes.
const MaxSealsPerPage = 10

type Sweeper struct {
	Transcript *transcript.Store
	// Retention is the worker's AGENT_RETENTION, used when the sweep's
	// input names none; 0 or less: off (SweepPage then removes nothing).
	Retention time.Duration
	// Now is the clock (nil: time.Now); tests set it.
	Now func() time.Time
	// describe asks Temporal about a task (nil: the activity's client).
	describe func(ctx context.Context, taskID string) (Execution, error)
	// seal writes a closed task's missing entries (nil: seal.go's).
	seal func(ctx context.Context, taskID string, f transcript.Folder, exec Execution) error
}

// SweepPage decides one page of task folders.
func (s *Sweeper) SweepPage(ctx context.Context, in SweepPageInput) (SweepPageResult, error) {
	var res SweepPageResult
	retention := in.Retention
	if retention <= 0 {
		retention = s.Retention
	}
	if retention <= 0 {
		res.Off = true
		return res, nil
	}
	if s.Transcript == nil {
		return res, temporal.NewNonRetryableApplicationError("the retention sweep needs the worker's transcript store", "INVALID_INPUT", nil)
	}
	size := in.Size
	if size <= 0 || size > transcript.MaxListPage {
		size = SweepPageSize
	}
	segs, next, err := s.Transcript.ListTasks(ctx, in.Cursor, size)
	if err != nil {
		return res, err
	}
	res.Next = next
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	seals := 0 // at most MaxSealsPerPage, so a page stays within its timeouts
	for _, seg := range segs {
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, res.Counts)
		}
		res.Counts.Tasks++
		v, id, err := s.decide(ctx, now(), retention, seg, &seals)
		switch {
		case err != nil:
			// Kept: a task the sweep cannot judge is never removed.
			res.Counts.Kept++
			if id == "" {
				res.Counts.Unnamed++
			}
			logger(ctx).Warn("retention: a task folder was kept, undecided", "folder", seg, "error", err)
		case v == Expire:
			res.Expired = append(res.Expired, id)
		case v == Seal:
			res.Counts.Sealed++
			res.Counts.Kept++
		default:
			res.Counts.Kept++
		}
	}
	return res, nil
}

// decide judges one task folder: its ID read back from the segment (or
// found through visibility when the segment was hashed), what Temporal says
// of it, and its objects' dates.
func (s *Sweeper) decide(ctx context.Context, now time.Time, retention time.Duration, seg string, seals *int) (Verdict, string, error) {
	id, err := s.taskID(ctx, seg)
	if err != nil {
		return Keep, "", err
	}
	folders, err := s.Transcript.Describe(ctx, seg)
	if err != nil {
		return Keep, id, err
	}
	if len(folders) == 0 {
		return Keep, id, nil // gone meanwhile (a deletion)
	}
	describe := s.describe
	if describe == nil {
		describe = describeTask
	}
	exec, err := describe(ctx, id)
	if err != nil {
		return Keep, id, err
	}
	var own *transcript.Folder
	for i := range folders {
		if exec.Known && folders[i].FirstRunID() == exec.FirstRunID {
			own = &folders[i]
		}
	}
	v := Decide(now, retention, folders, exec, own == nil || own.Stashed(SealedName))
	if v == Seal && *seals >= MaxSealsPerPage {
		return Keep, id, nil // sealed by a later sweep
	}
	if v == Seal {
		*seals++
		seal := s.seal
		if seal == nil {
			seal = s.sealTask
		}
		if err := seal(ctx, id, *own, exec); err != nil {
			return Keep, id, fmt.Errorf("sealing task %q: %w", id, err)
		}
	}
	return v, id, nil
}

// taskID reads the task ID back from its folder's segment; a hashed one
// (an ID longer than a segment holds) is looked for in visibility by the
// prefix it keeps, and one Temporal no longer knows cannot be named.
func (s *Sweeper) taskID(ctx context.Context, seg string) (string, error) {
	if id, ok := blobkey.Unsegment(seg); ok {
		return id, nil
	}
	prefix := transcript.SegmentPrefix(seg)
	if prefix == "" || !activity.IsActivity(ctx) {
		return "", fmt.Errorf("folder %q: its task ID cannot be read back", seg)
	}
	c := activity.GetClient(ctx)
	var token []byte
	for range 10 {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: "WorkflowId STARTS_WITH " + quote(prefix), PageSize: listPage, NextPageToken: token})
		if err != nil {
			return "", fmt.Errorf("folder %q: looking for its task ID: %w", seg, err)
		}
		for _, e := range resp.GetExecutions() {
			if id := e.GetExecution().GetWorkflowId(); blobkey.Segment(id) == seg {
				return id, nil
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	return "", fmt.Errorf("folder %q: its task ID (hashed in the folder's name) is unknown to Temporal; its objects are kept", seg)
}

// describeTask asks Temporal about the task's newest execution.
func describeTask(ctx context.Context, taskID string) (Execution, error) {
	d, err := activity.GetClient(ctx).DescribeWorkflowExecution(ctx, taskID, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return Execution{}, nil
	}
	if err != nil {
		return Execution{}, err
	}
	return executionOf(d.GetWorkflowExecutionInfo().GetStatus(), d.GetWorkflowExecutionInfo().GetFirstRunId(),
		d.GetWorkflowExecutionInfo().GetExecution().GetRunId(), d.GetWorkflowExecutionInfo().GetCloseTime().AsTime()), nil
}

func executionOf(status enumspb.WorkflowExecutionStatus, firstRun, run string, closed time.Time) Execution {
	return Execution{Known: true, Running: status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
		FirstRunID: firstRun, RunID: run, CloseTime: closed}
}

// logger is the activity's logger, or none outside an activity.
func logger(ctx context.Context) interface{ Warn(string, ...any) } {
	if activity.IsActivity(ctx) {
		return activity.GetLogger(ctx)
	}
	return nopLogger{}
}

type nopLogger struct{}

func (nopLogger) Warn(string, ...any) {}
