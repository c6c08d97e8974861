// Package cleanup removes what a task leaves behind: its objects in storage
// (PurgeTaskObjects, purge.go) and, through the DeleteTask workflow, its
// executions and those of its sub-tasks (delete*.go). Retention
// (retention*.go) calls the same purge for closed tasks.
package cleanup

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/blobkey"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/transcript"
)

// PurgeTaskObjectsName is the purge activity's type (API: add, never rename).
const PurgeTaskObjectsName = activities.PurgeTaskObjectsName

// Storage is where a worker keeps tasks' objects: what a purge removes from.
type Storage struct {
	Transcript *transcript.Store // transcripts and stashed state
	Files      *mount.Store      // opens the mounts
	Mounts     mount.Mounts      // every configured mount (AGENT_MOUNTS)
	Broker     *broker.Broker    // streamed events; nil: no broker, nothing to purge
}

// Activities are the cleanup's activities over a worker's storage.
type Activities struct {
	Storage Storage
}

// PurgeInput names the task whose objects go.
type PurgeInput struct {
	TaskID string `json:"taskId"`
}

// PurgeResult counts what a purge removed (this call and, for a retried
// attempt, the attempts before it), and says what it kept for live
// continuations.
type PurgeResult struct {
	TranscriptObjects int `json:"transcriptObjects"`
	Files             int `json:"files"`
	Events            int `json:"events"`
	// Kept are the task's transcripts a live continuation (a resumed or
	// rescued task) still reads: their entries below the continuation's
	// own stay, with their link, until no continuation reads them.
	Kept []KeptTranscript `json:"kept,omitempty"`
}

// Continuation names a task that continues another (transcript.Continuation).
type Continuation = transcript.Continuation

// KeptTranscript is one transcript a purge kept for live continuations.
type KeptTranscript struct {
	TaskID     string `json:"taskId"`
	FirstRunID string `json:"firstRunId"`
	// Entries counts the entries kept (those below Below).
	Entries int `json:"entries"`
	Below   int `json:"below"`
	// For are the live continuations that read them.
	For []Continuation `json:"for"`
}

// Add sums two counts; a transcript kept in both is reported as o says
// (the later purge of the same task: what is kept now).
func (r PurgeResult) Add(o PurgeResult) PurgeResult {
	out := PurgeResult{TranscriptObjects: r.TranscriptObjects + o.TranscriptObjects, Files: r.Files + o.Files, Events: r.Events + o.Events}
	out.Kept = append(out.Kept, r.Kept...)
	for _, k := range o.Kept {
		replaced := false
		for i := range out.Kept {
			if out.Kept[i].TaskID == k.TaskID && out.Kept[i].FirstRunID == k.FirstRunID {
				out.Kept[i], replaced = k, true
			}
		}
		if !replaced {
			out.Kept = append(out.Kept, k)
		}
	}
	return out
}

// Total is every object counted.
func (r PurgeResult) Total() int { return r.TranscriptObjects + r.Files + r.Events }

// purgePage bounds one listing: a heartbeat with the counts so far follows
// each page, so an interrupted purge resumes with its counts and lists only
// what is left.
const purgePage = 500

// PurgeTaskObjects removes every object of one task: every transcript
// object under tasks/<task id>/ in the transcript store (entries, link.json,
// stash, of every first run), every file of the task's space in every
// configured mount, and the task's streamed events in the broker. It is
// idempotent: a second call finds nothing and succeeds with zero counts. A
// task's sub-tasks are tasks of their own (DeleteTask purges each).
//
// Except what a live continuation reads: a transcript that records a
// continuation whose own transcript is still there (it runs, or is kept)
// keeps its entries below that continuation's first own position, its link
// and its continuation records, marked KeptName so that it reads as
// deleted; the purge reports it in Kept. And a transcript kept for this
// task alone goes with it: purging a continuation releases what it read
// (release).
func (a *Activities) PurgeTaskObjects(ctx context.Context, in PurgeInput) (PurgeResult, error) {
	if in.TaskID == "" {
		return PurgeResult{}, temporal.NewNonRetryableApplicationError("PurgeTaskObjects: taskId is empty; name the task whose objects go", contract.ErrInvalidInput, nil)
	}
	var done PurgeResult
	if activity.IsActivity(ctx) && activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &done) // best effort: counts only
	}
	beat := func() {
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, done)
		}
	}
	return a.Storage.purge(ctx, in.TaskID, done, beat)
}

// Purge is PurgeTaskObjects outside an activity (tests, tools).
func (s Storage) Purge(ctx context.Context, taskID string) (PurgeResult, error) {
	return s.purge(ctx, taskID, PurgeResult{}, func() {})
}

func (s Storage) purge(ctx context.Context, taskID string, done PurgeResult, beat func()) (PurgeResult, error) {
	if s.Transcript != nil {
		var err error
		if done, err = s.purgeTranscripts(ctx, taskID, done, beat); err != nil {
			return done, fmt.Errorf("purge %s: %w", taskID, err)
		}
	}
	if s.Files != nil {
		names := s.Mounts.Names()
		sort.Strings(names)
		for _, name := range names {
			spec := mount.Spec{Root: "task", URL: s.Mounts[name]}
			for more := true; more; {
				var n int
				var err error
				if err := ctx.Err(); err != nil {
					return done, fmt.Errorf("purge %s: mount %q: %w", taskID, name, err)
				}
				n, more, err = s.Files.DeleteSpacePage(ctx, spec, taskID, purgePage)
				done.Files += n
				beat()
				if err != nil {
					return done, fmt.Errorf("purge %s: mount %q: %w", taskID, name, err)
				}
			}
		}
	}
	if s.Broker != nil && broker.CheckRunID(taskID) == nil { // other IDs are never streamed
		n, err := s.Broker.Purge(ctx, taskID)
		done.Events += n
		beat()
		if err != nil {
			if errors.Is(err, broker.ErrUnavailable) {
				return done, fmt.Errorf("purge %s: its streamed events: %w (retried until the broker is back)", taskID, err)
			}
			return done, fmt.Errorf("purge %s: its streamed events: %w", taskID, err)
		}
	}
	return done, nil
}

// purgeTranscripts removes the task's transcript objects but what live
// continuations read (transcript.PlanKeep), then releases the transcripts
// this task's own continued (their records of it forgotten, and those kept
// for it alone removed).
func (s Storage) purgeTranscripts(ctx context.Context, taskID string, done PurgeResult, beat func()) (PurgeResult, error) {
	st := s.Transcript
	plan, err := st.PlanKeep(ctx, taskID)
	if err != nil {
		return done, err
	}
	// What this task's transcripts continue, read before their links go.
	runs, err := st.RunFolders(ctx, blobkey.Segment(taskID))
	if err != nil {
		return done, err
	}
	var parents []released
	for _, run := range runs {
		runID, ok := blobkey.Unsegment(run)
		if _, kept := plan[run]; !ok || kept {
			continue // a kept transcript still reads its parent
		}
		l, linked, err := st.ReadLink(ctx, transcript.Key{TaskID: taskID, FirstRunID: runID})
		if err != nil {
			return done, err
		}
		if linked {
			parents = append(parents, released{parent: l, child: Continuation{TaskID: taskID, FirstRunID: runID}})
		}
	}
	if err := st.MarkKept(ctx, taskID, plan); err != nil {
		return done, err
	}
	kept := map[string]int{}
	var token []byte
	for {
		if err := ctx.Err(); err != nil { // the worker stops: go on from here on retry
			return done, err
		}
		n, next, err := st.PurgePage(ctx, taskID, plan, token, purgePage, kept)
		done.TranscriptObjects += n
		beat()
		if err != nil {
			return done, err
		}
		if len(next) == 0 {
			break
		}
		token = next
	}
	var now PurgeResult
	for _, run := range sortedRuns(plan) {
		runID, _ := blobkey.Unsegment(run)
		k := plan[run]
		now.Kept = append(now.Kept, KeptTranscript{TaskID: taskID, FirstRunID: runID, Entries: kept[run], Below: k.Below, For: k.For})
	}
	done = done.Add(now)
	for _, p := range parents {
		n, err := s.release(ctx, p, 0)
		if done.TranscriptObjects += n; n > 0 {
			beat()
		}
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// released is a transcript (parent) that a purged one (child) continued.
type released struct {
	parent transcript.Link
	child  Continuation
}

// maxRelease bounds how far up a chain of kept transcripts one purge
// releases (a longer chain is left to the retention sweep).
const maxRelease = 100

// release forgets r.child in r.parent's records; when r.parent was kept
// for continuations (its task deleted) and none of them is live any more,
// its remaining objects go, and so on up the chain. It returns how many
// objects it removed.
func (s Storage) release(ctx context.Context, r released, depth int) (int, error) {
	st := s.Transcript
	pk := r.parent.Key()
	pk.From = 0
	removed := 0
	forgot, err := st.ForgetContinuation(ctx, pk, r.child)
	if err != nil {
		return 0, err
	}
	if forgot {
		removed++
	}
	var kept transcript.Kept
	err = st.GetJSON(ctx, pk, transcript.KeptName, &kept)
	if errors.Is(err, transcript.ErrNotFound) {
		return removed, nil // its task is not deleted: it keeps its transcript
	}
	if err != nil {
		return removed, err
	}
	live, more, err := st.LiveContinuations(ctx, pk)
	if err != nil || len(live) > 0 || more {
		return removed, err
	}
	grand, linked, err := st.ReadLink(ctx, pk)
	if err != nil {
		return removed, err
	}
	for more := true; more; {
		var n int
		n, more, err = st.PurgeRun(ctx, pk, purgePage)
		removed += n
		if err != nil {
			return removed, err
		}
	}
	if linked && depth < maxRelease {
		n, err := s.release(ctx, released{parent: grand, child: Continuation{TaskID: pk.TaskID, FirstRunID: pk.FirstRunID}}, depth+1)
		return removed + n, err
	}
	return removed, nil
}

func sortedRuns(plan transcript.KeepPlan) []string {
	out := make([]string, 0, len(plan))
	for run := range plan {
		out = append(out, run)
	}
	sort.Strings(out)
	return out
}
