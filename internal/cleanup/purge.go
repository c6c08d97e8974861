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

	"github.com/agenttask/agenttask/internal/activities"
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
// attempt, the attempts before it).
type PurgeResult struct {
	TranscriptObjects int `json:"transcriptObjects"`
	Files             int `json:"files"`
	Events            int `json:"events"`
}

// Add sums two counts.
func (r PurgeResult) Add(o PurgeResult) PurgeResult {
	return PurgeResult{TranscriptObjects: r.TranscriptObjects + o.TranscriptObjects, Files: r.Files + o.Files, Events: r.Events + o.Events}
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
func (a *Activities) PurgeTaskObjects(ctx context.Context, in PurgeInput) (PurgeResult, error) {
	if in.TaskID == "" {
		return PurgeResult{}, temporal.NewNonRetryableApplicationError("PurgeTaskObjects: taskId is empty; name the task whose objects go", "INVALID_INPUT", nil)
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
		for more := true; more; {
			var n int
			var err error
			if err := ctx.Err(); err != nil { // the worker stops: go on from here on retry
				return done, fmt.Errorf("purge %s: %w", taskID, err)
			}
			n, more, err = s.Transcript.DeleteTaskPage(ctx, taskID, purgePage)
			done.TranscriptObjects += n
			beat()
			if err != nil {
				return done, fmt.Errorf("purge %s: %w", taskID, err)
			}
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
