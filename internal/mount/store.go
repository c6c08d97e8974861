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
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file://
	_ "gocloud.dev/blob/gcsblob"  // gs://
	_ "gocloud.dev/blob/memblob"  // mem://, for tests
	_ "gocloud.dev/blob/s3blob"   // s3://
	"gocloud.dev/gcerrors"
)

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
	ready chan struct{} // closed when b, local, err are set
	b     *blob.Bucket
	local *localMount // file:// only
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
	lm   *localMount // file:// only
	isS3 bool
}

func (m mnt) s3() bool                  { return m.isS3 }
func (m mnt) local() bool               { return m.lm != nil }
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
		b, lm, err := s.openBucket(context.WithoutCancel(ctx), u, key)
		s.mu.Lock()
		if err == nil && s.closed {
			_ = b.Close()
			b, err = nil, errors.New("mount: store is closed")
		}
		e.b, e.local, e.err = b, lm, err
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
	return mnt{root: spec.Root, b: e.b, lm: e.local, isS3: u.Scheme == "s3"}, nil
}

func (s *Store) openBucket(ctx context.Context, u *url.URL, openURL string) (*blob.Bucket, *localMount, error) {
	var lm *localMount
	if u.Scheme == "file" {
		var err error
		if lm, err = newLocalMount(u, openURL); err != nil {
			return nil, nil, fmt.Errorf("mount: %s: %w", u.Redacted(), err)
		}
	}
	b, err := blob.OpenBucket(ctx, openURL)
	if err != nil {
		return nil, nil, fmt.Errorf("mount: open %s: %w", u.Redacted(), err)
	}
	if s.wrap != nil {
		b = s.wrap(b) // lm stays: file:// confinement checks the real folder
	}
	return b, lm, nil
}

// place is where one object of a task's space lives in an open mount.
type place struct {
	path string     // in the task's space
	key  string     // its blob key
	ref  string     // root://path, for messages
	file *localFile // file:// only
}

// resolve opens the mount and checks path; it returns where the object lives.
func (s *Store) resolve(ctx context.Context, spec Spec, taskID, path string) (mnt, place, error) {
	m, err := s.mount(ctx, spec)
	if err != nil {
		return mnt{}, place{}, err
	}
	if err := checkStorePath(spec.Root, path); err != nil {
		return mnt{}, place{}, err
	}
	key, err := objectKey(taskID, path)
	if err != nil {
		return mnt{}, place{}, err
	}
	pl := place{path: path, key: key, ref: m.ref(path)}
	if m.local() {
		if pl.file, err = m.lm.file(taskID, key, pl.ref); err != nil {
			return mnt{}, place{}, err
		}
	}
	return m, pl, nil
}

// checkRead applies the file:// confinement (a no-op elsewhere).
func (pl place) checkRead() error {
	if pl.file == nil {
		return nil
	}
	return pl.file.checkRead()
}

// checkWrite applies the file:// confinement (a no-op elsewhere).
func (pl place) checkWrite() error {
	if pl.file == nil {
		return nil
	}
	return pl.file.checkWrite()
}
