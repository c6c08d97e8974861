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

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/blobkey"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/transcript"
)

// MaxSealsPerPage bounds the seals (each a query, up to sealQueryTimeout)
// one page makes: 10 of 20 s stay well within the page's 10 minutes.
const MaxSealsPerPage = 10

// Sweeper holds the retention sweep's activity: it lists the worker's
// transcript store, which outlives Temporal's records of a task, so a task
// whose execution and visibility record Temporal's own retention removed
// is still found (and dated by its markers, or once by its objects); then
// the task folders of each mount, so files uploaded for a task that never
// started (a space with no transcript) expire by their age.
type Sweeper struct {
	Transcript *transcript.Store
	// Files and Mounts are the worker's mounts (AGENT_MOUNTS), whose
	// spaces without a transcript the sweep judges too; nil: none.
	Files  *mount.Store
	Mounts mount.Mounts
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

// SweepPage decides one page of task folders. A pass (the schedule's
// sweep and the runs it continues as) starts with no cursor; the page then
// resumes where the last pass stopped, if it stopped before the store's
// end (the cursor persisted by every page: sweep_cursor.go), so a store
// larger than a pass can walk is still walked to its end.
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
		return res, temporal.NewNonRetryableApplicationError("the retention sweep needs the worker's transcript store", contract.ErrInvalidInput, nil)
	}
	size := in.Size
	if size <= 0 || size > transcript.MaxListPage {
		size = SweepPageSize
	}
	cursor, resumed := in.Cursor, false
	if len(cursor) == 0 {
		saved, err := s.loadCursor(ctx)
		if err != nil {
			return res, err
		}
		cursor, resumed = saved, len(saved) > 0
	} else if err := s.saveCursor(ctx, cursor); err != nil {
		return res, err
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	res, err := s.page(ctx, now, retention, cursor, size)
	if err != nil && resumed {
		// A saved cursor the store no longer takes (an expired page
		// token, a mount since removed): the next attempt starts afresh.
		if cerr := s.clearCursor(ctx); cerr != nil {
			return res, errors.Join(err, cerr)
		}
		return res, fmt.Errorf("resuming the sweep where the last pass stopped: %w (the next attempt starts from the first task)", err)
	}
	if err == nil && len(res.Next) == 0 {
		err = s.clearCursor(ctx) // the store's end: the next pass starts afresh
	}
	return res, err
}

// page decides the folders of one page: of the transcript store, or of a
// mount once the store's folders are done (the cursor says which).
func (s *Sweeper) page(ctx context.Context, now func() time.Time, retention time.Duration, cursor []byte, size int) (SweepPageResult, error) {
	var res SweepPageResult
	at := decodeCursor(cursor)
	if at.Mount != "" {
		return s.spacesPage(ctx, now, retention, at, size)
	}
	segs, next, err := s.Transcript.ListTasks(ctx, at.Token, size)
	if err != nil {
		return res, err
	}
	res.Next = next
	if len(next) == 0 {
		res.Next = s.mountCursor("") // then the mounts' spaces
	}
	seals := 0 // at most MaxSealsPerPage, so a page stays within its timeouts
	for _, seg := range segs {
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, res.Counts)
		}
		o, err := s.decide(ctx, now(), retention, seg, &seals)
		if o.none && err == nil {
			continue // no transcript: a space alone (judged with the mount's), or an emptied folder
		}
		res.Counts.Tasks++
		switch {
		case err != nil:
			// Kept: a task the sweep cannot judge is never removed.
			res.Counts.Kept++
			if o.id == "" {
				res.Counts.Unnamed++
			}
			logger(ctx).Warn("retention: a task folder was kept, undecided", "folder", seg, "error", err)
		case o.verdict == Expire:
			res.Expired = append(res.Expired, o.id)
		case o.verdict == Seal:
			res.Counts.Sealed++
			res.Counts.Kept++
		default:
			res.Counts.Kept++
			if o.continued {
				res.Counts.KeptForContinuations++
			}
		}
	}
	return res, nil
}

// outcome is the sweep's decision about one task folder.
type outcome struct {
	verdict Verdict
	id      string
	// continued: the task was deleted, and transcripts of it stay
	// because a live continuation reads them.
	continued bool
	// none: the folder holds no transcript.
	none bool
}

// decide judges one task folder: its ID read back from the segment (or
// found through visibility when the segment was hashed), what Temporal says
// of it, and the dates of its transcripts (dateOf: markers, not listings).
func (s *Sweeper) decide(ctx context.Context, now time.Time, retention time.Duration, seg string, seals *int) (outcome, error) {
	o := outcome{verdict: Keep}
	runs, err := s.Transcript.RunFolders(ctx, seg)
	if err != nil {
		return o, err
	}
	if len(runs) == 0 {
		o.none = true
		return o, nil
	}
	if o.id, err = s.taskID(ctx, seg); err != nil {
		return o, err
	}
	describe := s.describe
	if describe == nil {
		describe = describeTask
	}
	exec, err := describe(ctx, o.id)
	if err != nil {
		return o, err
	}
	if exec.Known && exec.Running {
		return o, nil // nothing listed: a running task keeps every folder of its ID
	}
	var folders []transcript.Folder
	var kept []transcript.Key
	own, sealed := "", true
	for _, run := range runs {
		runID, named := blobkey.Unsegment(run)
		k := transcript.Key{TaskID: o.id, FirstRunID: runID}
		if named {
			var mark transcript.Kept
			err := s.Transcript.GetJSON(ctx, k, transcript.KeptName, &mark)
			if err == nil {
				kept = append(kept, k) // its task was deleted: judged by its continuations
				continue
			}
			if !errors.Is(err, transcript.ErrNotFound) {
				return o, err
			}
		}
		if exec.Known && named && runID == exec.FirstRunID {
			own = run // dated by its close, below (the seal writes after it)
			var mark sealMark
			err := s.Transcript.GetJSON(ctx, k, SealedName, &mark)
			if err != nil && !errors.Is(err, transcript.ErrNotFound) {
				return o, err
			}
			sealed = err == nil
			folders = append(folders, transcript.Folder{TaskSegment: seg, FirstRunSegment: run})
			continue
		}
		newest, there, err := s.dateOf(ctx, seg, run, k, named)
		if err != nil {
			return o, err
		}
		if there {
			folders = append(folders, transcript.Folder{TaskSegment: seg, FirstRunSegment: run, Newest: newest})
		}
	}
	if len(folders) == 0 {
		if len(kept) == 0 {
			o.none = true // emptied meanwhile (a deletion)
			return o, nil
		}
		// What is left of a deleted task: it stays while a continuation
		// reads it, and goes (DeleteTask, finding little else) after.
		for _, k := range kept {
			live, more, err := s.Transcript.LiveContinuations(ctx, k)
			if err != nil {
				return o, err
			}
			if len(live) > 0 || more {
				o.continued = true
				return o, nil
			}
		}
		o.verdict = Expire
		return o, nil
	}
	o.verdict = Decide(now, retention, folders, exec, sealed)
	if o.verdict == Seal && *seals >= MaxSealsPerPage {
		o.verdict = Keep // sealed by a later sweep
		return o, nil
	}
	if o.verdict == Seal {
		*seals++
		f, ok, err := s.Transcript.DescribeRun(ctx, seg, own)
		if err != nil || !ok {
			return outcome{verdict: Keep, id: o.id}, err
		}
		seal := s.seal
		if seal == nil {
			seal = s.sealTask
		}
		if err := seal(ctx, o.id, f, exec); err != nil {
			return outcome{verdict: Keep, id: o.id}, fmt.Errorf("sealing task %q: %w", o.id, err)
		}
	}
	return o, nil
}

// dateOf is when the transcript run of task folder seg was last written,
// for one that no run writes any more (an older chain of the task ID, or
// a task Temporal no longer knows): from its seal (the close it records,
// else when it was sealed), else from the date an earlier sweep recorded
// (transcript.DatedName), else by listing its objects once and recording
// their newest date for the sweeps after. there is false when the folder
// holds nothing (emptied meanwhile).
func (s *Sweeper) dateOf(ctx context.Context, seg, run string, k transcript.Key, named bool) (time.Time, bool, error) {
	if named {
		var mark sealMark
		err := s.Transcript.GetJSON(ctx, k, SealedName, &mark)
		if err == nil {
			for _, v := range []string{mark.ClosedAt, mark.SealedAt} {
				if t, err := contract.ParseTime(v); err == nil && !t.IsZero() {
					return t, true, nil
				}
			}
		} else if !errors.Is(err, transcript.ErrNotFound) {
			return time.Time{}, false, err
		}
		var d transcript.Dated
		err = s.Transcript.GetJSON(ctx, k, transcript.DatedName, &d)
		if err == nil && !d.Newest.IsZero() {
			return d.Newest, true, nil
		}
		if err != nil && !errors.Is(err, transcript.ErrNotFound) {
			return time.Time{}, false, err
		}
	}
	f, ok, err := s.Transcript.DescribeRun(ctx, seg, run)
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	if named && !f.Truncated && !f.Newest.IsZero() {
		if err := s.Transcript.PutJSON(ctx, k, transcript.DatedName, transcript.Dated{Newest: f.Newest, DatedAt: contract.FormatTime(time.Now())}); err != nil {
			return time.Time{}, false, err
		}
	}
	return f.Newest, true, nil
}

// spacesPage decides one page of a mount's task folders: a space whose
// task has no transcript (its files were uploaded, the task never started
// or left none) and that Temporal does not know expires like a task, dated
// by its newest file.
func (s *Sweeper) spacesPage(ctx context.Context, now func() time.Time, retention time.Duration, at sweepCursor, size int) (SweepPageResult, error) {
	var res SweepPageResult
	url, ok := s.Mounts[at.Mount]
	if !ok || s.Files == nil {
		res.Next = s.mountCursor(at.Mount) // a mount no longer configured: the next one
		return res, nil
	}
	spec := mount.Spec{Root: "task", URL: url}
	segs, next, err := s.Files.ListTaskFolders(ctx, spec, at.Token, size)
	if err != nil {
		return res, fmt.Errorf("mount %q: %w", at.Mount, err)
	}
	if len(next) > 0 {
		res.Next = encodeCursor(sweepCursor{Mount: at.Mount, Token: next})
	} else {
		res.Next = s.mountCursor(at.Mount)
	}
	describe := s.describe
	if describe == nil {
		describe = describeTask
	}
	for _, seg := range segs {
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, res.Counts)
		}
		runs, err := s.Transcript.RunFolders(ctx, seg)
		if err != nil {
			return res, err
		}
		if len(runs) > 0 {
			continue // judged with its transcript
		}
		t := now()
		found, recent, err := s.Files.SpaceActivity(ctx, spec, seg, t.Add(-retention))
		if err != nil {
			return res, fmt.Errorf("mount %q: %w", at.Mount, err)
		}
		if !found {
			continue
		}
		res.Counts.Spaces++
		if recent {
			res.Counts.Kept++
			continue
		}
		id, err := s.taskID(ctx, seg)
		if err != nil {
			res.Counts.Kept++
			res.Counts.Unnamed++
			logger(ctx).Warn("retention: a space was kept, its task ID unknown", "mount", at.Mount, "folder", seg, "error", err)
			continue
		}
		exec, err := describe(ctx, id)
		switch {
		case err != nil:
			res.Counts.Kept++
			logger(ctx).Warn("retention: a space was kept, undecided", "mount", at.Mount, "task", id, "error", err)
		case exec.Known:
			// It runs, or it closed with no transcript here: it may be
			// another queue's task (whose store holds its transcript) on a
			// shared mount. Left until Temporal forgets it.
			res.Counts.Kept++
		default:
			res.Expired = append(res.Expired, id)
		}
	}
	return res, nil
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
