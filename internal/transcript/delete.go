package transcript

import (
	"context"
	"errors"
	"fmt"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/agenttask/agenttask/internal/blobkey"
)

// TaskPrefix is the folder of every transcript of a task ID (all its first
// runs: entries, link.json, stash), ending in "/" so no other task's folder
// shares it.
func TaskPrefix(taskID string) (string, error) {
	if taskID == "" {
		return "", errors.New("transcript: empty task ID")
	}
	return "tasks/" + blobkey.Segment(taskID) + "/", nil
}

// DeleteTaskPage removes up to max objects under the task's folder (all its
// transcripts and stashes) and reports how many it removed and whether more
// may be left. Each call lists the folder from its start, so a caller that
// was interrupted resumes by calling again: what it removed is no longer
// listed. An object already gone counts as removed by someone else (not
// counted, no error). The store's cache forgets every removed key.
func (s *Store) DeleteTaskPage(ctx context.Context, taskID string, max int) (int, bool, error) {
	prefix, err := TaskPrefix(taskID)
	if err != nil {
		return 0, false, err
	}
	if max <= 0 {
		max = 1000
	}
	return s.deletePrefixPage(ctx, prefix, max)
}

// deletePrefixPage removes the first max objects under prefix and reports
// how many it removed and whether more may be left; an object already gone
// is not counted, and the cache forgets every removed key.
func (s *Store) deletePrefixPage(ctx context.Context, prefix string, max int) (int, bool, error) {
	objs, next, err := s.b.ListPage(ctx, blob.FirstPageToken, max, &blob.ListOptions{Prefix: prefix})
	if err != nil {
		return 0, false, fmt.Errorf("transcript: list %s: %w", prefix, err)
	}
	n := 0
	for _, o := range objs {
		if o.IsDir {
			continue
		}
		err := s.b.Delete(ctx, o.Key)
		s.cache.c.Invalidate(o.Key)
		if gcerrors.Code(err) == gcerrors.NotFound {
			continue
		}
		if err != nil {
			return n, true, fmt.Errorf("transcript: delete %s: %w", o.Key, err)
		}
		n++
	}
	return n, len(next) > 0, nil
}

// TaskFolders lists the task IDs whose folders begin with prefix's escaped
// form (e.g. a task's sub-tasks, "<task id>."), at most max of them. A
// folder whose name was shortened with a hash (an ID longer than
// blobkey.MaxSegment allows) cannot be read back and is skipped.
func (s *Store) TaskFolders(ctx context.Context, prefix string, max int) ([]string, error) {
	if prefix == "" {
		return nil, errors.New("transcript: empty task ID prefix")
	}
	lp := "tasks/" + blobkey.Segment(prefix)
	var ids []string
	token := blob.FirstPageToken
	for len(token) > 0 && len(ids) < max {
		objs, next, err := s.b.ListPage(ctx, token, max, &blob.ListOptions{Prefix: lp, Delimiter: "/"})
		if err != nil {
			return ids, fmt.Errorf("transcript: list %s: %w", lp, err)
		}
		for _, o := range objs {
			if !o.IsDir || len(ids) >= max {
				continue
			}
			seg := o.Key[len("tasks/") : len(o.Key)-1]
			if id, ok := blobkey.Unsegment(seg); ok {
				ids = append(ids, id)
			}
		}
		token = next
	}
	return ids, nil
}
