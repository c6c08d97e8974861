package cleanup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/transcript"
)

// The sweep's cursor. A pass walks the transcript store's task folders,
// then each mount's (sorted by name), a page at a time; the cursor says
// where the next page starts. In the transcript store it is the store's
// own page token, as before; in a mount it is cursorMount followed by the
// JSON of a sweepCursor (a worker of an earlier release given such a
// cursor lists its store from the start: one walk more, nothing lost).
//
// Every page with a cursor persists it (a state object of the transcript
// store, per task queue); the store's end clears it. A pass starts with no
// cursor and resumes from the persisted one, so a pass that did not reach
// the end (its day ran out, its worker stopped for good, a page kept
// failing) is continued by the next instead of walking the first folders
// again: on a large store the tail is reached.

// cursorMount starts a cursor into a mount's task folders.
const cursorMount = "agenttask-sweep-mount:"

type sweepCursor struct {
	Mount string `json:"mount,omitempty"` // "": the transcript store
	Token []byte `json:"token,omitempty"`
}

func encodeCursor(c sweepCursor) []byte {
	if c.Mount == "" {
		return c.Token
	}
	b, _ := json.Marshal(c)
	return append([]byte(cursorMount), b...)
}

func decodeCursor(b []byte) sweepCursor {
	rest, ok := bytes.CutPrefix(b, []byte(cursorMount))
	if !ok {
		return sweepCursor{Token: b}
	}
	var c sweepCursor
	if json.Unmarshal(rest, &c) != nil || c.Mount == "" {
		return sweepCursor{} // unreadable: from the start
	}
	return c
}

// mountCursor is the cursor of the first page of the mount after the one
// named after ("": the first mount), nil after the last: the store's end.
func (s *Sweeper) mountCursor(after string) []byte {
	if s.Files == nil {
		return nil
	}
	names := s.Mounts.Names()
	sort.Strings(names)
	for _, n := range names {
		if n > after {
			return encodeCursor(sweepCursor{Mount: n})
		}
	}
	return nil
}

// savedCursor is the persisted cursor.
type savedCursor struct {
	Cursor  []byte `json:"cursor"`
	SavedAt string `json:"savedAt"`
}

// cursorName names the persisted cursor of the sweeps of the activity's
// task queue (one schedule per queue).
func cursorName(ctx context.Context) string {
	q := "default"
	if activity.IsActivity(ctx) {
		q = activity.GetInfo(ctx).TaskQueue
	}
	return "retention-cursor-" + q
}

func (s *Sweeper) loadCursor(ctx context.Context) ([]byte, error) {
	var c savedCursor
	err := s.Transcript.GetState(ctx, cursorName(ctx), &c)
	if errors.Is(err, transcript.ErrNotFound) {
		return nil, nil
	}
	return c.Cursor, err
}

func (s *Sweeper) saveCursor(ctx context.Context, cursor []byte) error {
	return s.Transcript.PutState(ctx, cursorName(ctx), savedCursor{Cursor: cursor, SavedAt: contract.FormatTime(time.Now())})
}

func (s *Sweeper) clearCursor(ctx context.Context) error {
	return s.Transcript.DeleteState(ctx, cursorName(ctx))
}
