package cleanup

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/transcript"
	"github.com/agenttask/agenttask/internal/workflows"
)

// Sealing a closed task. The transcript lacks what only the workflow made
// final: its last output is stamped (committed_at) by the workflow, and the
// stamp reaches the transcript with the next activity, which a closed task
// never runs. So once a task has closed, the sweep reads its messages from
// Temporal (the query, while the history is there) and writes the
// committed entries its transcript lacks, then the SealedName marker; the
// clients can then serve its messages from the transcript alone once
// Temporal's retention removes the history (internal/retained). Temporal's
// retention must be longer than the sweep's interval (at most an hour) for
// the seal to come first.

// SealedName is the stash object that marks a sealed transcript.
const SealedName = "retention-sealed"

// sealPage is how many entries one query asks for.
const sealPage = 200

// sealQueryTimeout bounds one query (a closed task's is answered by a
// worker replaying its history), well under SweepPage's heartbeat
// timeout (1 minute; the page heartbeats between folders).
const sealQueryTimeout = 20 * time.Second

type sealMark struct {
	Entries  int    `json:"entries"`
	SealedAt string `json:"sealedAt"`
	Run      string `json:"run"`
	// ClosedAt is when the sealed run closed: the sweep dates the
	// transcript by it once Temporal no longer knows the task (older
	// seals have none: their SealedAt dates them).
	ClosedAt string `json:"closedAt,omitempty"`
}

// sealTask writes task's committed entries that its folder f lacks, read
// with the messages query of its closed execution, and marks it sealed.
func (sw *Sweeper) sealTask(ctx context.Context, taskID string, f transcript.Folder, exec Execution) error {
	if !activity.IsActivity(ctx) {
		return fmt.Errorf("sealing needs the activity's Temporal client")
	}
	if f.Linked && len(f.Entries) == 0 {
		// Where its own entries would start is in its workflow's state only.
		return fmt.Errorf("transcript %s/%s continues another and has no entries of its own: left unsealed", taskID, f.FirstRunID())
	}
	c := activity.GetClient(ctx)
	s := sw.Transcript
	query := func(after int) ([]contract.Message, error) {
		deadline := time.Now().Add(workflows.MessagesLoadingRetryFor)
		for {
			qctx, cancel := context.WithTimeout(ctx, sealQueryTimeout)
			v, err := c.QueryWorkflow(qctx, taskID, exec.RunID, contract.QueryMessages, contract.MessagesPage{After: after, Limit: sealPage})
			if err == nil {
				var out []contract.Message
				err = v.Get(&out)
				cancel()
				return out, err
			}
			cancel()
			if !workflows.IsMessagesLoading(err) || time.Now().After(deadline) {
				return nil, err
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(workflows.MessagesLoadingRetryPause):
			}
		}
	}
	// Entries up to the folder's last own one are there; below its first
	// own one (a continuation) they belong to the transcript it continues.
	next := 0
	if len(f.Entries) > 0 {
		next = f.Entries[len(f.Entries)-1] + 1
	}
	k := transcript.KeyOf(taskID, f, 0)
	// The seal writes as the task's last run.
	wctx := transcript.WithWriter(ctx, transcript.Writer{Run: exec.RunID, Started: time.Now().UTC()})
	written := 0
	for after := next; ; {
		page, err := query(after)
		if err != nil {
			return fmt.Errorf("the messages query: %w", err)
		}
		var committed []contract.Message
		for _, m := range page {
			if m.CommittedAt == "" {
				break // inputs never committed: they die with the execution
			}
			committed = append(committed, m)
		}
		if len(committed) > 0 {
			if after < k.From {
				return fmt.Errorf("transcript %s: entries from %d read below its own first %d", k, after, k.From)
			}
			if err := s.Write(wctx, k, after, committed); err != nil {
				return err
			}
			written += len(committed)
		}
		activity.RecordHeartbeat(ctx, written)
		if len(committed) < len(page) || len(page) == 0 {
			break
		}
		after += len(page)
	}
	return s.PutJSON(ctx, k, SealedName, sealMark{Entries: next + written, SealedAt: contract.FormatTime(time.Now()), Run: exec.RunID,
		ClosedAt: contract.FormatTime(exec.CloseTime)})
}
