package mount

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"gocloud.dev/blob"

	"github.com/agenttask/agenttask/contract"
)

// metaSHA256 is the blob metadata key Copy writes the content's sha256 under,
// so a retried Copy to an object store recognises its own finished copy
// without reading it. file:// mounts do not keep it (metadata=skip) and are
// re-hashed instead.
const metaSHA256 = "sha256"

// Copy streams the object so (from Stat, in srcTask's space of mount src)
// into dstTask's space of mount dst at dstPath, checking its sha256 on the way.
//
// It is idempotent: when dstPath already holds an object of the same size and
// sha256 (known from the metadata Copy writes on object stores, re-hashed on
// file:// mounts) it returns that object without writing. Otherwise it
// verifies the source by its attributes (FILE_CHANGED, FILE_NOT_FOUND), then
// copies in 1 MiB chunks (never the whole object in memory), heartbeat
// getting the bytes processed so far at least every 8 MiB and every second.
// If the bytes read do not have so's size and sha256 the write is aborted,
// anything it left at dstPath is deleted, and Copy returns FILE_CHANGED.
func (s *Store) Copy(ctx context.Context, src Spec, srcTask string, so Object, dst Spec, dstTask, dstPath string, heartbeat func(int64)) (Object, error) {
	sm, spl, err := s.resolve(ctx, src, srcTask, so.Path)
	if err != nil {
		return Object{}, err
	}
	dm, dpl, err := s.resolve(ctx, dst, dstTask, dstPath)
	if err != nil {
		return Object{}, err
	}
	want, err := hex.DecodeString(so.SHA256)
	if err != nil || len(want) != sha256.Size || so.Size < 0 {
		return Object{}, contract.Invalid("copy of %s: the source object has no valid sha256 and size; Stat it first and pass the Object Stat returned", spl.ref)
	}
	if err := dpl.checkWrite(); err != nil {
		return Object{}, err
	}
	p := startProgress(heartbeat)
	defer p.end()

	// Done already (a retry)?
	prev, err := dm.b.Attributes(ctx, dpl.key)
	switch {
	case err == nil:
		if o, ok, err := dm.sameAs(ctx, dpl, prev, so, want, p); err != nil || ok {
			return o, err
		}
	case dm.isNotFound(err):
		prev = nil
	default:
		return Object{}, fmt.Errorf("mount: %s: attributes: %w", dpl.ref, err)
	}
	return copyBytes(ctx, sm, spl, so, want, dm, dpl, prev, p)
}

// copyBytes is Copy once the destination is known not to hold so already
// (prev: what it holds, if anything).
func copyBytes(ctx context.Context, sm mnt, spl place, so Object, want []byte, dm mnt, dpl place, prev *blob.Attributes, p *progress) (Object, error) {
	if err := sm.verify(ctx, spl, so); err != nil {
		return Object{}, err
	}
	r, err := sm.reader(ctx, spl)
	if err != nil {
		return Object{}, err
	}
	defer r.Close()
	opts := dm.options(r.ContentType(), map[string]string{metaSHA256: so.SHA256})
	_, _, err = dm.write(ctx, dpl, opts, r, p, func(n int64, sum []byte) error {
		if n != so.Size || !bytes.Equal(sum, want) {
			return changed(spl.ref, "its content no longer has the recorded size and sha256 (%d bytes read, %d recorded)", n, so.Size)
		}
		return nil
	})
	if err != nil {
		if contract.TypeOf(err) == ErrFileChanged {
			dm.dropPartial(ctx, dpl, prev)
		}
		return Object{}, err
	}
	a, err := dm.attrs(ctx, dpl)
	if err != nil {
		return Object{}, err
	}
	o := objectOf(dpl.path, a, dm.local())
	if o.Size != so.Size {
		return Object{}, changed(dpl.ref, "another writer replaced it while it was copied (%d bytes copied, %d stored)", so.Size, o.Size)
	}
	o.SHA256 = so.SHA256
	return o, nil
}

// sameAs reports whether the destination (attributes a) already holds so's
// content: same size, then the sha256 Copy recorded in its metadata (object
// stores) or, failing that, the sha256 of its content.
func (m mnt) sameAs(ctx context.Context, pl place, a *blob.Attributes, so Object, want []byte, p *progress) (Object, bool, error) {
	if a.Size != so.Size {
		return Object{}, false, nil
	}
	o := objectOf(pl.path, a, m.local())
	o.SHA256 = so.SHA256
	if !m.local() && a.Metadata[metaSHA256] == so.SHA256 {
		return o, true, nil
	}
	if err := pl.checkRead(); err != nil {
		if contract.TypeOf(err) == contract.ErrInvalidInput || contract.TypeOf(err) == ErrFileNotFound {
			return Object{}, false, nil // a link out, or gone: the copy replaces it
		}
		return Object{}, false, err
	}
	n, sum, err := m.hash(ctx, pl, p)
	if err != nil {
		if contract.TypeOf(err) == ErrFileNotFound {
			return Object{}, false, nil
		}
		return Object{}, false, err
	}
	if n != so.Size || !bytes.Equal(sum, want) {
		return Object{}, false, nil
	}
	after, err := m.b.Attributes(ctx, pl.key)
	if err != nil || objectOf(pl.path, after, m.local()).version() != o.version() {
		return Object{}, false, nil // replaced while hashed: copy again
	}
	return o, true, nil
}

// dropPartial deletes what an aborted copy may have left at the destination:
// an object that was not there before the copy, or differs from the one that
// was. Drivers abort a canceled write, so normally there is nothing to
// delete. On file:// mounts the file is deleted through the task space's Root.
func (m mnt) dropPartial(ctx context.Context, pl place, prev *blob.Attributes) {
	ctx = context.WithoutCancel(ctx)
	a, err := m.b.Attributes(ctx, pl.key)
	if err != nil {
		return
	}
	if prev != nil && objectOf("", a, m.local()).version() == objectOf("", prev, m.local()).version() && a.Size == prev.Size {
		return
	}
	if pl.file != nil {
		_ = pl.file.remove()
		return
	}
	_ = m.b.Delete(ctx, pl.key)
}
