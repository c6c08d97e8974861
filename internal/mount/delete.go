package mount

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"gocloud.dev/blob"
)

// DeleteSpacePage removes up to max files of the task's space in the mount
// spec names (Root is not used: any valid root will do) and reports how many
// it removed and whether more may be left. Each call starts from what is
// left, so an interrupted caller resumes by calling again; a file already
// gone is not counted.
//
// In a file:// mount files are removed through an os.Root on the mount's
// folder (a link is removed, never followed), and once no file is left the
// space's folders go too, so nothing of the task stays on disk.
func (s *Store) DeleteSpacePage(ctx context.Context, spec Spec, taskID string, max int) (int, bool, error) {
	if spec.Root == "" {
		spec.Root = "task"
	}
	if max <= 0 {
		max = 1000
	}
	prefix, err := spacePrefix(taskID)
	if err != nil {
		return 0, false, err
	}
	m, err := s.mount(ctx, spec)
	if err != nil {
		return 0, false, err
	}
	if m.local() {
		return m.lm.deleteSpace(prefix, max)
	}
	objs, next, err := m.b.ListPage(ctx, blob.FirstPageToken, max, &blob.ListOptions{Prefix: prefix})
	if err != nil {
		return 0, false, fmt.Errorf("mount: list %s: %w", prefix, err)
	}
	n := 0
	for _, o := range objs {
		if o.IsDir {
			continue
		}
		err := m.b.Delete(ctx, o.Key)
		if m.isNotFound(err) {
			continue
		}
		if err != nil {
			return n, true, fmt.Errorf("mount: delete %s: %w", o.Key, err)
		}
		n++
	}
	return n, len(next) > 0, nil
}

// deleteSpace removes up to max non-folder entries (files, links, fileblob's
// sidecars) under the space's folder, and the folders once none is left,
// then the task's folder if nothing else (a transcript sharing the folder)
// is in it.
func (lm *localMount) deleteSpace(prefix string, max int) (int, bool, error) {
	r, err := os.OpenRoot(lm.dir)
	if isMissing(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer r.Close()
	space := filepath.FromSlash(prefix[:len(prefix)-1]) // tasks/<id>/files
	n := 0
	errFull := errors.New("page full")
	err = fs.WalkDir(r.FS(), filepath.ToSlash(space), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if isMissing(err) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		if n >= max {
			return errFull
		}
		if err := r.Remove(filepath.FromSlash(p)); err != nil && !isMissing(err) {
			return err
		}
		n++
		return nil
	})
	if errors.Is(err, errFull) {
		return n, true, nil
	}
	if err != nil {
		return n, true, fmt.Errorf("mount: delete the task's space %s: %w", space, err)
	}
	if err := r.RemoveAll(space); err != nil && !isMissing(err) {
		return n, true, fmt.Errorf("mount: delete the task's space %s: %w", space, err)
	}
	_ = r.Remove(filepath.Dir(space)) // fails while the transcript keeps folders there: fine
	return n, false, nil
}
