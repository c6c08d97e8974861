package workflows

import (
	"fmt"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// A rescue or a resume starts a new task on an earlier task's conversation
// (ContinueFrom, filled by the starter). Under rules.ownSpaces the new
// task owns everything it writes: its own transcript, whose positions below
// the tail are read from the earlier task's (by reference, never written),
// and its own file space, into which every file the carried conversation
// references is copied before anything else runs (docs/content.md: content that
// crosses a task boundary is copied into the recipient's mount). So any
// number of continuations of one task, and continuations of continuations,
// never write the same object, and no model request of one task names an
// object outside its own space.

// continueFrom starts this task (taskID, firstRunID) on an earlier task's
// conversation: entries before TailFrom are final in that task's transcript;
// the tail is held and written whole by the first call; inputs it never
// committed are queued again.
func (t *task) continueFrom(c contract.ContinueFrom, taskID, firstRunID string) {
	if t.rules.ownSpaces {
		t.durable.inTranscript(activities.TranscriptKey{TaskID: taskID, FirstRunID: firstRunID, From: c.TailFrom,
			Parent: &activities.TranscriptLink{TaskID: c.TaskID, FirstRunID: c.FirstRunID, From: c.From}})
		t.opening.carry(&c)
	} else {
		// Older rules: the earlier task's transcript, shared; its files are
		// shown as references only.
		t.durable.inTranscript(activities.TranscriptKey{TaskID: c.TaskID, FirstRunID: c.FirstRunID})
		t.durable.ownsFrom(c.Length)
	}
	t.durable.holdTail(c.TailFrom, c.Tail)
	for _, m := range c.Queued {
		t.durable.enqueue(m)
	}
	if len(c.Tail) > 0 && c.Tail[len(c.Tail)-1].Type == contract.TypeInput {
		t.turn.owe() // a new task: nothing was owed before
	}
}

// callCarry names the copy for retry reports (status.retrying).
const callCarry = "carry"

// carryFiles copies the files of the carried conversation into this task's
// space and records where each went (the model turn reads them from there).
// It waits out storage outages like any storage call; a file that is gone or
// changed is not an error: the model is told it could not be carried over.
func (t *task) carryFiles(ctx workflow.Context) error {
	c := t.opening.takeCarrying()
	source := activities.TranscriptKey{TaskID: c.TaskID, FirstRunID: c.FirstRunID, From: c.From, Parent: c.Parent}
	in := activities.CopyFilesInput{
		DstTask: t.life.id(),
		Carried: &activities.CarriedFiles{
			Transcript: t.durable.transcriptKey(), Source: source, End: c.TailFrom,
			Spaces: carriedSpaces(c),
		},
		Retry: t.waitOut().retry(callCarry),
	}
	if m := t.args.Agent.Mount; m != nil {
		in.Src, in.Dst = *m, *m
	}
	for _, m := range append(append([]contract.Message(nil), c.Tail...), c.Queued...) {
		for _, p := range m.Message {
			if p.File != nil {
				in.Parts = append(in.Parts, p)
			}
		}
	}
	done := t.outages.waiting(callCarry)
	defer done()
	var res activities.CopyFilesResult
	o := t.waitOut().options(copyOptions, 0)
	o.Summary = fmt.Sprintf("copy the carried conversation's files %s → %s", c.Source, t.life.id())
	actx := workflow.WithActivityOptions(ctx, o)
	if err := workflow.ExecuteActivity(actx, activities.CopyFilesName, in).Get(ctx, &res); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return unwrapActivityError(err) // INTERNAL once storage stayed down past modelRetryTimeout
	}
	if res.Carried > 0 || len(res.Unavailable) > 0 {
		t.logger.Info("carried the earlier conversation's files over", "copied", res.Carried, "unavailable", len(res.Unavailable))
	}
	return nil
}

// carriedSpaces are the spaces the carried files may be in, tried in order:
// the continued task's own, then (when it shared an older task's transcript)
// that task's.
func carriedSpaces(c *contract.ContinueFrom) []string {
	var out []string
	if c.Source != "" {
		out = append(out, c.Source)
	}
	if c.TaskID != c.Source {
		out = append(out, c.TaskID)
	}
	return out
}
