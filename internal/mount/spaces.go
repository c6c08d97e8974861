package mount

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"gocloud.dev/blob"
)

// Listing the spaces of a mount, for the retention sweep
// (internal/cleanup): a task whose files were uploaded but that never
// started has a space and no transcript, so the sweep finds it here.

// MaxListPage bounds one page of ListTaskFolders.
const MaxListPage = 1000

// ListTaskFolders returns one page (at most size) of the task folders
// under tasks/ in the mount spec names (their escaped task IDs, as
// blobkey.Segment makes them), from token (nil: the first page), and the
// next page's token (nil: the last page). A folder is listed whether or
// not it holds a space (files/): SpaceActivity says.
func (s *Store) ListTaskFolders(ctx context.Context, spec Spec, token []byte, size int) (segments []string, next []byte, err error) {
	if size <= 0 || size > MaxListPage {
		return nil, nil, fmt.Errorf("mount: list page size %d: want 1 to %d", size, MaxListPage)
	}
	if spec.Root == "" {
		spec.Root = "task"
	}
	m, err := s.mount(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	if len(token) == 0 {
		token = blob.FirstPageToken
	}
	objs, next, err := m.b.ListPage(ctx, token, size, &blob.ListOptions{Prefix: "tasks/", Delimiter: "/"})
	if err != nil {
		return nil, nil, fmt.Errorf("mount: listing the task folders: %w", err)
	}
	for _, o := range objs {
		if o.IsDir {
			segments = append(segments, strings.TrimSuffix(strings.TrimPrefix(o.Key, "tasks/"), "/"))
		}
	}
	return segments, next, nil
}

// SpaceActivity reports whether the space of the task folder segment in
// the mount spec names holds any file, and whether one was modified at or
// after since. The listing stops at the first such file, so a space in use
// costs one short listing and an old one is listed once before it goes.
func (s *Store) SpaceActivity(ctx context.Context, spec Spec, segment string, since time.Time) (found, recent bool, err error) {
	if segment == "" || strings.Contains(segment, "/") {
		return false, false, fmt.Errorf("mount: bad task folder %q", segment)
	}
	if spec.Root == "" {
		spec.Root = "task"
	}
	m, err := s.mount(ctx, spec)
	if err != nil {
		return false, false, err
	}
	it := m.b.List(&blob.ListOptions{Prefix: "tasks/" + segment + "/files/"})
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return found, false, nil
		}
		if err != nil {
			return found, false, fmt.Errorf("mount: listing the space %s: %w", segment, err)
		}
		if o.IsDir {
			continue
		}
		found = true
		if !o.ModTime.Before(since) {
			return true, true, nil
		}
	}
}
