// Package mount gives agents file storage that travels by reference (seed
// 001): an agent's mount is a gocloud.dev/blob bucket (Spec), every task of
// the agent has its own space in it, and content parts name objects there as
// "<root>://<path>" (task://sample.mp4). Bytes never enter workflow state: an
// activity uploads, stats, verifies, opens or copies them here and hands the
// workflow a ContentPart and an Object (size, sha256, version attributes).
//
// Layout under the bucket root:
//
//	tasks/<escaped task id>/files/<path>
//
// Task IDs are escaped as transcript/key.go escapes them ([a-z0-9_-] plus
// %hh), so no task ID can add a "/", reach ".." or fold onto another; paths
// are checked by ParseRef's rules, so no path leaves its task's space.
//
// Verify checks that an object is still the one that was referenced without
// reading it again, by the attributes recorded in Object, in this order:
//
//   - MD5, when the driver reports one: memblob (computed on write), s3blob
//     (from the ETag of single-part uploads), gcsblob (non-composite objects).
//   - else the ETag: s3blob multipart uploads, gcsblob composite objects.
//   - else ModTime and Size.
//
// file:// mounts never record an MD5: with the default metadata=skip fileblob
// keeps none, and with sidecar metadata the sidecar is not tied to the
// content (a file edited in place keeps the old MD5). Their ETag is fileblob's
// "<mtime in ns>-<size>", so Verify compares ModTime (nanoseconds) and Size:
// any rewrite through the store, or by a tool that moves the modification
// time, is FILE_CHANGED, even one with identical bytes; an in-place edit that
// keeps both size and mtime (a deliberate touch -d) is not seen. Copy
// re-hashes the content it moves in every case.
//
// Errors: refusals are *contract.Error values of type INVALID_INPUT,
// FILE_NOT_FOUND or FILE_CHANGED with a corrective message; storage faults
// (network, permissions) are plain errors, worth retrying.
package mount

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"os"
	"sync"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file://
	_ "gocloud.dev/blob/gcsblob"  // gs://
	_ "gocloud.dev/blob/memblob"  // mem://, for tests
	_ "gocloud.dev/blob/s3blob"   // s3://
	"gocloud.dev/gcerrors"

	"github.com/agenttask/agenttask/contract"
)

// Streaming sizes: content moves in chunks of copyBuffer bytes; object-store
// uploads buffer at most one part (S3 parts cannot be smaller than 5 MiB).
const (
	copyBuffer   = 1 << 20
	s3PartSize   = 5 << 20
	gcsChunkSize = 1 << 20 // a multiple of 256 KiB, as GCS requires
)

// metaSHA256 is the blob metadata key Copy writes the content's sha256 under,
// so a retried Copy to an object store recognises its own finished copy
// without reading it. file:// mounts do not keep it (metadata=skip) and are
// re-hashed instead.
const metaSHA256 = "sha256"

// Object describes one object of a task's space as it was when referenced.
type Object struct {
	Path    string    `json:"path"`          // inside the task's space (no root)
	Size    int64     `json:"size"`          // bytes
	SHA256  string    `json:"sha256"`        // hex, of the content
	MD5     string    `json:"md5,omitempty"` // hex, from the driver's attributes when it has one (never for file://)
	ETag    string    `json:"etag,omitempty"`
	ModTime time.Time `json:"modTime"`
}

// version is what Verify compares besides the size (see the package doc).
func (o Object) version() string {
	switch {
	case o.MD5 != "":
		return "md5 " + o.MD5
	case o.ETag != "":
		return "etag " + o.ETag
	default:
		return "modified " + o.ModTime.UTC().Format(time.RFC3339Nano)
	}
}

func (o Object) describe() string {
	switch {
	case o.MD5 != "":
		return "its MD5 is now " + o.MD5
	case o.ETag != "":
		return "its version (ETag) is now " + o.ETag
	default:
		return "it was modified at " + o.ModTime.UTC().Format(time.RFC3339Nano)
	}
}

func objectOf(path string, a *blob.Attributes, local bool) Object {
	o := Object{Path: path, Size: a.Size, ETag: a.ETag, ModTime: a.ModTime}
	if !local && len(a.MD5) > 0 {
		o.MD5 = hex.EncodeToString(a.MD5)
	}
	return o
}

// Store opens mount buckets by URL and confines every task to its space. Open
// buckets are cached per URL for the Store's lifetime. It is safe for
// concurrent use.
type Store struct {
	mu      sync.Mutex
	buckets map[string]*bucketEntry
	closed  bool
	wrap    func(*blob.Bucket) *blob.Bucket // nil: buckets as opened
}

type bucketEntry struct {
	ready chan struct{} // closed when b, dir, err are set
	b     *blob.Bucket
	dir   string // file:// only: the absolute folder
	err   error
}

// NewStore returns an empty Store; buckets are opened on first use.
func NewStore() *Store { return NewStoreWith(nil) }

// NewStoreWith is NewStore with every bucket the Store opens passed through
// wrap (nil: none), e.g. a faultblob.Wrap for tests that simulate a storage
// outage. The Store closes the wrapped bucket.
func NewStoreWith(wrap func(*blob.Bucket) *blob.Bucket) *Store {
	return &Store{buckets: map[string]*bucketEntry{}, wrap: wrap}
}

// Close closes every bucket the Store opened. Calls after Close fail.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	es := s.buckets
	s.buckets = nil
	s.mu.Unlock()
	var errs []error
	for _, e := range es {
		<-e.ready
		if e.b != nil {
			errs = append(errs, e.b.Close())
		}
	}
	return errors.Join(errs...)
}

// mnt is an open mount.
type mnt struct {
	root string
	b    *blob.Bucket
	dir  string // file:// only
	isS3 bool
}

func (m mnt) s3() bool                  { return m.isS3 }
func (m mnt) local() bool               { return m.dir != "" }
func (m mnt) ref(p string) string       { return FormatRef(m.root, p) }
func (m mnt) isNotFound(err error) bool { return gcerrors.Code(err) == gcerrors.NotFound }

func (s *Store) mount(ctx context.Context, spec Spec) (mnt, error) {
	if err := CheckRoot(spec.Root); err != nil {
		return mnt{}, err
	}
	u, err := parseMountURL(spec.URL)
	if err != nil {
		return mnt{}, err
	}
	key := openURL(u)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return mnt{}, errors.New("mount: store is closed")
	}
	e, ok := s.buckets[key]
	if !ok {
		e = &bucketEntry{ready: make(chan struct{})}
		s.buckets[key] = e
		s.mu.Unlock()
		// Not the caller's cancellation: others may be waiting for this bucket.
		b, dir, err := s.openBucket(context.WithoutCancel(ctx), u, key)
		s.mu.Lock()
		if err == nil && s.closed {
			_ = b.Close()
			b, err = nil, errors.New("mount: store is closed")
		}
		e.b, e.dir, e.err = b, dir, err
		if err != nil && s.buckets != nil {
			delete(s.buckets, key) // let a later call try again
		}
		s.mu.Unlock()
		close(e.ready)
	} else {
		s.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return mnt{}, ctx.Err()
		}
	}
	if e.err != nil {
		return mnt{}, e.err
	}
	return mnt{root: spec.Root, b: e.b, dir: e.dir, isS3: u.Scheme == "s3"}, nil
}

func (s *Store) openBucket(ctx context.Context, u *url.URL, openURL string) (*blob.Bucket, string, error) {
	var dir string
	if u.Scheme == "file" {
		var err error
		if dir, err = localDir(u); err != nil {
			return nil, "", fmt.Errorf("mount: %s: %w", u.Redacted(), err)
		}
	}
	b, err := blob.OpenBucket(ctx, openURL)
	if err != nil {
		return nil, "", fmt.Errorf("mount: open %s: %w", u.Redacted(), err)
	}
	if s.wrap != nil {
		b = s.wrap(b) // dir stays: file:// confinement checks the real folder
	}
	return b, dir, nil
}

// resolve opens the mount and checks path; it returns the object key.
func (s *Store) resolve(ctx context.Context, spec Spec, taskID, path string) (mnt, string, error) {
	m, err := s.mount(ctx, spec)
	if err != nil {
		return mnt{}, "", err
	}
	if err := checkStorePath(spec.Root, path); err != nil {
		return mnt{}, "", err
	}
	key, err := objectKey(taskID, path)
	if err != nil {
		return mnt{}, "", err
	}
	return m, key, nil
}

// checkRead applies the file:// confinement (a no-op elsewhere) and returns
// the local file, if any.
func (m mnt) checkRead(taskID, path string) (string, error) {
	if !m.local() {
		return "", nil
	}
	return checkLocalRead(m.dir, taskID, path, m.ref(path))
}

func (m mnt) attrs(ctx context.Context, key, ref string) (*blob.Attributes, error) {
	a, err := m.b.Attributes(ctx, key)
	if err != nil {
		if m.isNotFound(err) {
			return nil, notFound(ref, "")
		}
		return nil, fmt.Errorf("mount: %s: attributes: %w", ref, err)
	}
	return a, nil
}

func (m mnt) reader(ctx context.Context, key, ref string) (*blob.Reader, error) {
	r, err := m.b.NewReader(ctx, key, nil)
	if err != nil {
		if m.isNotFound(err) {
			return nil, notFound(ref, "")
		}
		return nil, fmt.Errorf("mount: %s: open: %w", ref, err)
	}
	return r, nil
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, copyBuffer); return &b }}

// hash reads the object through and returns its length and sha256.
func (m mnt) hash(ctx context.Context, key, ref string, p *progress) (int64, []byte, error) {
	r, err := m.reader(ctx, key, ref)
	if err != nil {
		return 0, nil, err
	}
	defer r.Close()
	h := sha256.New()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, nil, err
		}
		k, err := r.Read(buf)
		if k > 0 {
			h.Write(buf[:k])
			n += int64(k)
			p.add(k)
		}
		if err == io.EOF {
			return n, h.Sum(nil), nil
		}
		if err != nil {
			return n, nil, fmt.Errorf("mount: %s: read: %w", ref, err)
		}
	}
}

// write streams r into key. Once r is exhausted, check (if set) decides
// whether the object is published; on any failure the write is aborted and
// nothing is published under key (fileblob writes a temporary file beside the
// target and renames it; object stores abort the upload).
func (m mnt) write(ctx context.Context, key, ref string, opts *blob.WriterOptions, r io.Reader, p *progress, check func(n int64, sum []byte) error) (int64, []byte, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := m.b.NewWriter(wctx, key, opts)
	if err != nil {
		return 0, nil, fmt.Errorf("mount: %s: write: %w", ref, err)
	}
	h := sha256.New()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var n int64
	for err == nil {
		if err = ctx.Err(); err != nil {
			break
		}
		k, rerr := r.Read(buf)
		if k > 0 {
			h.Write(buf[:k])
			if _, werr := w.Write(buf[:k]); werr != nil {
				err = fmt.Errorf("mount: %s: write: %w", ref, werr)
				break
			}
			n += int64(k)
			p.add(k)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			err = fmt.Errorf("mount: %s: read source: %w", ref, rerr)
		}
	}
	sum := h.Sum(nil)
	if err == nil && check != nil {
		err = check(n, sum)
	}
	if err != nil {
		cancel() // a canceled writer's Close aborts the write
		_ = w.Close()
		return n, nil, err
	}
	if err := w.Close(); err != nil {
		return n, nil, fmt.Errorf("mount: %s: write: %w", ref, err)
	}
	return n, sum, nil
}

// Stat checks that path exists in the task's space and returns its
// attributes and the sha256 of its content. The content is streamed (never
// held in memory); heartbeat, when set, gets the bytes read so far at least
// every 8 MiB and every second. An object that changes while it is read is
// read again, up to three times, then refused with FILE_CHANGED. Missing is
// FILE_NOT_FOUND; on file:// mounts an object whose real path leaves the
// task's space (a symbolic link out) is INVALID_INPUT.
func (s *Store) Stat(ctx context.Context, m Spec, taskID, path string, heartbeat func(int64)) (Object, error) {
	mt, key, err := s.resolve(ctx, m, taskID, path)
	if err != nil {
		return Object{}, err
	}
	ref := mt.ref(path)
	file, err := mt.checkRead(taskID, path)
	if err != nil {
		return Object{}, err
	}
	p := startProgress(heartbeat)
	defer p.end()
	const attempts = 3
	for i := 1; ; i++ {
		a, err := mt.attrs(ctx, key, ref)
		if err != nil {
			return Object{}, err
		}
		if file != "" {
			if err := sameLocalFile(a, file, ref); err != nil {
				return Object{}, err
			}
		}
		n, sum, err := mt.hash(ctx, key, ref, p)
		if err != nil {
			return Object{}, err
		}
		after, err := mt.attrs(ctx, key, ref)
		if err != nil {
			return Object{}, err
		}
		o, o2 := objectOf(path, a, mt.local()), objectOf(path, after, mt.local())
		if n == o.Size && o2.Size == o.Size && o2.version() == o.version() {
			o.SHA256 = hex.EncodeToString(sum)
			return o, nil
		}
		if i == attempts {
			return Object{}, changed(ref, "it kept changing while it was read; wait until it is completely written")
		}
	}
}

// sameLocalFile cross-checks localPath against the file fileblob stats.
func sameLocalFile(a *blob.Attributes, file, ref string) error {
	var fi os.FileInfo
	if !a.As(&fi) {
		return nil
	}
	st, err := os.Stat(file)
	if err == nil && os.SameFile(fi, st) {
		return nil
	}
	return fmt.Errorf("mount: %s: internal: the store's file is not %s; fileblob's key escaping differs from this package's", ref, file)
}

// Verify checks, without reading the content again, that o is still what its
// path holds: the same size and version attributes (MD5 when o has one, else
// ETag, else ModTime; see the package doc). A mismatch is FILE_CHANGED, a
// missing object FILE_NOT_FOUND.
func (s *Store) Verify(ctx context.Context, m Spec, taskID string, o Object) error {
	mt, key, err := s.resolve(ctx, m, taskID, o.Path)
	if err != nil {
		return err
	}
	return mt.verify(ctx, taskID, key, o)
}

func (m mnt) verify(ctx context.Context, taskID, key string, o Object) error {
	ref := m.ref(o.Path)
	if _, err := m.checkRead(taskID, o.Path); err != nil {
		return err
	}
	a, err := m.attrs(ctx, key, ref)
	if err != nil {
		return err
	}
	cur := objectOf(o.Path, a, m.local())
	if cur.Size != o.Size {
		return changed(ref, "it is now %d bytes, it was %d", cur.Size, o.Size)
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
		return changed(ref, "%s (recorded: %s)", cur.describe(), rec.version())
	}
	return nil
}

// Open returns a reader of the object at path in the task's space. Callers
// Verify the referenced Object first; Open itself only refuses what Stat
// refuses (missing, links out of the space).
func (s *Store) Open(ctx context.Context, m Spec, taskID, path string) (io.ReadCloser, error) {
	mt, key, err := s.resolve(ctx, m, taskID, path)
	if err != nil {
		return nil, err
	}
	if _, err := mt.checkRead(taskID, path); err != nil {
		return nil, err
	}
	return mt.reader(ctx, key, mt.ref(path))
}

// Upload streams r into the task's space at path (replacing what was there)
// and returns the content part to send ({"mimeType", "file": root://path,
// "sizeBytes"}) and the Object, sha256 included (hashed while writing).
// Nothing is published under path unless r is read to its end and the write
// completes. Metadata on the part is the caller's to add.
func (s *Store) Upload(ctx context.Context, m Spec, taskID, path, mimeType string, r io.Reader) (contract.ContentPart, Object, error) {
	mt, key, err := s.resolve(ctx, m, taskID, path)
	if err != nil {
		return contract.ContentPart{}, Object{}, err
	}
	ref := mt.ref(path)
	if mimeType == "" {
		return contract.ContentPart{}, Object{}, contract.Invalid("%s: a mimeType is required, e.g. \"video/mp4\" or \"text/plain\"", ref)
	}
	if _, _, err := mime.ParseMediaType(mimeType); err != nil {
		return contract.ContentPart{}, Object{}, contract.Invalid("%s: mimeType %q is not a media type (%v); use e.g. \"video/mp4\"", ref, mimeType, err)
	}
	if mt.local() {
		if err := checkLocalWrite(mt.dir, taskID, path, ref); err != nil {
			return contract.ContentPart{}, Object{}, err
		}
	}
	p := startProgress(nil)
	n, sum, err := mt.write(ctx, key, ref, mt.options(mimeType, nil), r, p, nil)
	if err != nil {
		return contract.ContentPart{}, Object{}, err
	}
	a, err := mt.attrs(ctx, key, ref)
	if err != nil {
		return contract.ContentPart{}, Object{}, err
	}
	o := objectOf(path, a, mt.local())
	if o.Size != n {
		return contract.ContentPart{}, Object{}, changed(ref, "another writer replaced it while it was uploaded (%d bytes written, %d stored)", n, o.Size)
	}
	o.SHA256 = hex.EncodeToString(sum)
	file := ref
	return contract.ContentPart{MimeType: mimeType, File: &file, SizeBytes: &n}, o, nil
}

// options are the writer options of this mount's driver: bounded buffers.
func (m mnt) options(contentType string, metadata map[string]string) *blob.WriterOptions {
	o := &blob.WriterOptions{ContentType: contentType, Metadata: metadata, BufferSize: gcsChunkSize, MaxConcurrency: 1}
	if contentType == "" {
		o.DisableContentTypeDetection = true
	}
	if m.s3() {
		o.BufferSize = s3PartSize
	}
	return o
}

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
	sm, skey, err := s.resolve(ctx, src, srcTask, so.Path)
	if err != nil {
		return Object{}, err
	}
	dm, dkey, err := s.resolve(ctx, dst, dstTask, dstPath)
	if err != nil {
		return Object{}, err
	}
	sref, dref := sm.ref(so.Path), dm.ref(dstPath)
	want, err := hex.DecodeString(so.SHA256)
	if err != nil || len(want) != sha256.Size || so.Size < 0 {
		return Object{}, contract.Invalid("copy of %s: the source object has no valid sha256 and size; Stat it first and pass the Object Stat returned", sref)
	}
	if dm.local() {
		if err := checkLocalWrite(dm.dir, dstTask, dstPath, dref); err != nil {
			return Object{}, err
		}
	}
	p := startProgress(heartbeat)
	defer p.end()

	// Done already (a retry)?
	prev, err := dm.b.Attributes(ctx, dkey)
	switch {
	case err == nil:
		if o, ok, err := dm.sameAs(ctx, dstTask, dkey, dstPath, prev, so, want, p); err != nil || ok {
			return o, err
		}
	case dm.isNotFound(err):
		prev = nil
	default:
		return Object{}, fmt.Errorf("mount: %s: attributes: %w", dref, err)
	}

	if err := sm.verify(ctx, srcTask, skey, so); err != nil {
		return Object{}, err
	}
	r, err := sm.reader(ctx, skey, sref)
	if err != nil {
		return Object{}, err
	}
	defer r.Close()
	opts := dm.options(r.ContentType(), map[string]string{metaSHA256: so.SHA256})
	_, _, err = dm.write(ctx, dkey, dref, opts, r, p, func(n int64, sum []byte) error {
		if n != so.Size || !bytes.Equal(sum, want) {
			return changed(sref, "its content no longer has the recorded size and sha256 (%d bytes read, %d recorded)", n, so.Size)
		}
		return nil
	})
	if err != nil {
		if contract.TypeOf(err) == ErrFileChanged {
			dm.dropPartial(ctx, dkey, prev)
		}
		return Object{}, err
	}
	a, err := dm.attrs(ctx, dkey, dref)
	if err != nil {
		return Object{}, err
	}
	o := objectOf(dstPath, a, dm.local())
	if o.Size != so.Size {
		return Object{}, changed(dref, "another writer replaced it while it was copied (%d bytes copied, %d stored)", so.Size, o.Size)
	}
	o.SHA256 = so.SHA256
	return o, nil
}

// sameAs reports whether the destination (attributes a) already holds so's
// content: same size, then the sha256 Copy recorded in its metadata (object
// stores) or, failing that, the sha256 of its content.
func (m mnt) sameAs(ctx context.Context, taskID, key, path string, a *blob.Attributes, so Object, want []byte, p *progress) (Object, bool, error) {
	if a.Size != so.Size {
		return Object{}, false, nil
	}
	o := objectOf(path, a, m.local())
	o.SHA256 = so.SHA256
	if !m.local() && a.Metadata[metaSHA256] == so.SHA256 {
		return o, true, nil
	}
	if _, err := m.checkRead(taskID, path); err != nil {
		if contract.TypeOf(err) == contract.ErrInvalidInput || contract.TypeOf(err) == ErrFileNotFound {
			return Object{}, false, nil // a link out, or gone: the copy replaces it
		}
		return Object{}, false, err
	}
	ref := m.ref(path)
	n, sum, err := m.hash(ctx, key, ref, p)
	if err != nil {
		if contract.TypeOf(err) == ErrFileNotFound {
			return Object{}, false, nil
		}
		return Object{}, false, err
	}
	if n != so.Size || !bytes.Equal(sum, want) {
		return Object{}, false, nil
	}
	after, err := m.b.Attributes(ctx, key)
	if err != nil || objectOf(path, after, m.local()).version() != o.version() {
		return Object{}, false, nil // replaced while hashed: copy again
	}
	return o, true, nil
}

// dropPartial deletes what an aborted copy may have left at key: an object
// that was not there before the copy, or differs from the one that was.
// Drivers abort a canceled write, so normally there is nothing to delete.
func (m mnt) dropPartial(ctx context.Context, key string, prev *blob.Attributes) {
	ctx = context.WithoutCancel(ctx)
	a, err := m.b.Attributes(ctx, key)
	if err != nil {
		return
	}
	if prev != nil && objectOf("", a, m.local()).version() == objectOf("", prev, m.local()).version() && a.Size == prev.Size {
		return
	}
	_ = m.b.Delete(ctx, key)
}
