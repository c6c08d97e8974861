package mount

import (
	"context"
	"encoding/hex"
	"io"
)

// Stat checks that path exists in the task's space and returns its
// attributes and the sha256 of its content. The content is streamed (never
// held in memory); heartbeat, when set, gets the bytes read so far at least
// every 8 MiB and every second. An object that changes while it is read is
// read again, up to three times, then refused with FILE_CHANGED. Missing is
// FILE_NOT_FOUND; on file:// mounts an object whose real path leaves the
// task's space (a symbolic link out) is INVALID_INPUT.
func (s *Store) Stat(ctx context.Context, m Spec, taskID, path string, heartbeat func(int64)) (Object, error) {
	mt, pl, err := s.resolve(ctx, m, taskID, path)
	if err != nil {
		return Object{}, err
	}
	if err := pl.checkRead(); err != nil {
		return Object{}, err
	}
	p := startProgress(heartbeat)
	defer p.end()
	const attempts = 3
	for i := 1; ; i++ {
		a, err := mt.attrs(ctx, pl)
		if err != nil {
			return Object{}, err
		}
		n, sum, err := mt.hash(ctx, pl, p)
		if err != nil {
			return Object{}, err
		}
		after, err := mt.attrs(ctx, pl)
		if err != nil {
			return Object{}, err
		}
		o, o2 := objectOf(path, a, mt.local()), objectOf(path, after, mt.local())
		if n == o.Size && o2.Size == o.Size && o2.version() == o.version() {
			o.SHA256 = hex.EncodeToString(sum)
			return o, nil
		}
		if i == attempts {
			return Object{}, changed(pl.ref, "it kept changing while it was read; wait until it is completely written")
		}
	}
}

// Verify checks, without reading the content again, that o is still what its
// path holds: the same size and version attributes (MD5 when o has one, else
// ETag, else ModTime; see the package doc). A mismatch is FILE_CHANGED, a
// missing object FILE_NOT_FOUND.
func (s *Store) Verify(ctx context.Context, m Spec, taskID string, o Object) error {
	mt, pl, err := s.resolve(ctx, m, taskID, o.Path)
	if err != nil {
		return err
	}
	return mt.verify(ctx, pl, o)
}

func (m mnt) verify(ctx context.Context, pl place, o Object) error {
	if err := pl.checkRead(); err != nil {
		return err
	}
	a, err := m.attrs(ctx, pl)
	if err != nil {
		return err
	}
	cur := objectOf(o.Path, a, m.local())
	if cur.Size != o.Size {
		return changed(pl.ref, "it is now %d bytes, it was %d", cur.Size, o.Size)
	}
	// Compare by the attribute o was recorded with.
	rec := o
	if m.local() {
		rec.MD5, rec.ETag = "", "" // ModTime and Size (see the package doc)
	}
	if rec.MD5 == "" {
		cur.MD5 = ""
	}
	if rec.MD5 != "" || rec.ETag == "" {
		cur.ETag = ""
	}
	if cur.version() != rec.version() {
		return changed(pl.ref, "%s (recorded: %s)", cur.describe(), rec.version())
	}
	return nil
}

// Open returns a reader of the object at path in the task's space. Callers
// Verify the referenced Object first; Open itself only refuses what Stat
// refuses (missing, links out of the space).
func (s *Store) Open(ctx context.Context, m Spec, taskID, path string) (io.ReadCloser, error) {
	mt, pl, err := s.resolve(ctx, m, taskID, path)
	if err != nil {
		return nil, err
	}
	if err := pl.checkRead(); err != nil {
		return nil, err
	}
	return mt.reader(ctx, pl)
}
