// Package retained serves what the clients read of a task once Temporal's
// retention has removed its execution but the transcript store still holds
// its objects (until the retention sweep, internal/cleanup, removes them):
// its messages, read from the transcript as the `messages` query would
// answer them.
//
// The transcript holds every committed entry once the task has ended and
// the sweep has sealed it (internal/cleanup: a closed task's last output is
// stamped by the workflow alone, so the sweep writes it from the query
// while Temporal still has the history). Inputs received but never
// committed lived in the workflow only and are gone with it.
package retained

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/blobkey"
	"github.com/agenttask/agenttask/internal/transcript"
)

// ErrNotFound: the store holds no transcript of the task.
var ErrNotFound = errors.New("no transcript of the task is stored")

// readBatch is how many entries one store read asks for.
const readBatch = 64

// maxChain bounds the continued transcripts followed to find a length.
const maxChain = 100

// Messages answers as the `messages` query does, from the newest
// transcript of taskID (several first-run folders: the task ID was reused,
// and the newest chain is the one Temporal last knew): a nil page asks for
// the whole list, refused beyond contract.MaxFullListBytes; a page for the
// entries after page.After, at most page.Limit (0: as many as fit) and
// never more than contract.MaxPageBytes.
func Messages(ctx context.Context, s *transcript.Store, taskID string, page *contract.MessagesPage) ([]contract.Message, error) {
	if page != nil && (page.After < 0 || page.Limit < 0) {
		return nil, fmt.Errorf("after and limit must not be negative")
	}
	k, total, err := Find(ctx, s, taskID)
	if err != nil {
		return nil, err
	}
	from, limit, maxBytes := 0, total, contract.MaxFullListBytes
	if page != nil {
		from, maxBytes = page.After, contract.MaxPageBytes
		if page.Limit > 0 {
			limit = page.Limit
		}
	}
	out := []contract.Message{}
	size := 2
	for p := from; p < total && len(out) < limit; {
		to := min(p+readBatch, total, p+limit-len(out))
		batch, err := s.Read(ctx, k, p, to)
		if err != nil {
			return nil, fmt.Errorf("reading entries %d-%d of task %q from the transcript: %w", p, to-1, taskID, err)
		}
		for _, m := range batch {
			b, _ := json.Marshal(m)
			if len(out) > 0 && size+len(b)+1 > maxBytes {
				if page != nil {
					return out, nil
				}
				return nil, fmt.Errorf("the conversation holds %d entries, more than one reply of %d bytes carries; read it by pages with the argument {\"after\": n, \"limit\": m}", total, contract.MaxFullListBytes)
			}
			out = append(out, m)
			size += len(b) + 1
			p++
		}
	}
	return out, nil
}

// Find returns the key of taskID's newest transcript and how many entries
// it reads (its own and, below its first own one, the transcripts it
// continues), or ErrNotFound. A transcript kept after its task was deleted,
// for a continuation that still reads it (transcript.KeptName), is not the
// task's any more: a deleted task is not found.
func Find(ctx context.Context, s *transcript.Store, taskID string) (transcript.Key, int, error) {
	if taskID == "" {
		return transcript.Key{}, 0, errors.New("empty task ID")
	}
	folders, err := s.Describe(ctx, blobkey.Segment(taskID))
	if err != nil {
		return transcript.Key{}, 0, err
	}
	for _, f := range folders {
		if f.FirstRunID() == "" {
			continue // not a folder this runtime wrote
		}
		if f.Stashed(transcript.KeptName) {
			// Its task was deleted; what is left is another task's (a
			// continuation reads it), not this task's to serve.
			continue
		}
		n, err := length(ctx, s, taskID, f, 0)
		if err != nil {
			return transcript.Key{}, 0, err
		}
		parent := 0
		if f.Linked && len(f.Entries) == 0 {
			parent = n
		}
		return transcript.KeyOf(taskID, f, parent), n, nil
	}
	return transcript.Key{}, 0, fmt.Errorf("task %q: %w", taskID, ErrNotFound)
}

// length is how many entries folder f of taskID reads: up to its last own
// entry, or, with none, its parent's length. Entries are written in order
// from the transcript's first own position, so the last one bounds them.
func length(ctx context.Context, s *transcript.Store, taskID string, f transcript.Folder, depth int) (int, error) {
	if len(f.Entries) > 0 {
		return f.Entries[len(f.Entries)-1] + 1, nil
	}
	if !f.Linked {
		return 0, nil
	}
	if depth >= maxChain {
		return 0, fmt.Errorf("task %q: its chain of continued transcripts is longer than %d", taskID, maxChain)
	}
	l, ok, err := s.ReadLink(ctx, transcript.Key{TaskID: taskID, FirstRunID: f.FirstRunID(), From: 1})
	if err != nil || !ok {
		return 0, err
	}
	folders, err := s.Describe(ctx, blobkey.Segment(l.TaskID))
	if err != nil {
		return 0, err
	}
	for _, pf := range folders {
		if pf.FirstRunID() == l.FirstRunID {
			return length(ctx, s, l.TaskID, pf, depth+1)
		}
	}
	return 0, nil // the parent's objects are gone: nothing below is readable
}
