// Package faultblob wraps a gocloud.dev/blob bucket so that tests can
// simulate a storage outage: while a Switch is on, every operation on the
// wrapped bucket fails, including reads and writes on readers and writers
// opened before, the way a dropped connection fails them.
//
// An injected fault has the code gcerrors.Unknown, the code real drivers give
// a network failure they do not recognise, so callers treat it as a storage
// fault worth retrying and never as NotFound or FailedPrecondition; errors of
// the wrapped bucket keep their code (NotFound stays NotFound).
//
// The wrapper delegates to the public API of the wrapped *blob.Bucket, so it
// works over any driver and the driver's own types stay reachable through As.
package faultblob

import (
	"context"
	"errors"
	"sync/atomic"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

// ErrUnavailable is the fault On(nil) injects.
var ErrUnavailable = errors.New("faultblob: storage unavailable (injected)")

// Switch turns the fault on and off for every bucket wrapped with it. It is
// safe for concurrent use; the zero value is off.
type Switch struct {
	fault    atomic.Pointer[fault]
	failures atomic.Int64
	lists    atomic.Pointer[func(prefix, delimiter string)]
}

// ObserveLists calls fn with the prefix and delimiter of every listing of a
// bucket wrapped with the switch (tests count what a caller lists); nil
// stops it.
func (s *Switch) ObserveLists(fn func(prefix, delimiter string)) {
	if fn == nil {
		s.lists.Store(nil)
		return
	}
	s.lists.Store(&fn)
}

// On makes every operation from now on fail with an error wrapping err
// (ErrUnavailable if err is nil).
func (s *Switch) On(err error) {
	if err == nil {
		err = ErrUnavailable
	}
	s.fault.Store(&fault{err: err})
}

// Off ends the outage.
func (s *Switch) Off() { s.fault.Store(nil) }

// Active reports whether the switch is on.
func (s *Switch) Active() bool { return s.fault.Load() != nil }

// Failures counts the operations that failed because the switch was on.
func (s *Switch) Failures() int { return int(s.failures.Load()) }

// check returns the injected fault, counting it, or nil when off.
func (s *Switch) check() error {
	f := s.fault.Load()
	if f == nil {
		return nil
	}
	s.failures.Add(1)
	return f
}

// fault is an injected error. It matches err for errors.Is but has no Unwrap,
// so errors.As (and with it gcerrors.Code) never reaches a code err may
// carry: whatever err is, the fault stays Unknown, never NotFound.
type fault struct{ err error }

func (f *fault) Error() string        { return f.err.Error() }
func (f *fault) Is(target error) bool { return errors.Is(f.err, target) }

// IsInjected reports whether err is (or wraps) a fault injected by a Switch.
func IsInjected(err error) bool {
	var f *fault
	return errors.As(err, &f)
}

// Wrap returns a bucket that delegates to b while sw is off and fails while it
// is on. Closing it closes b.
func Wrap(b *blob.Bucket, sw *Switch) *blob.Bucket {
	return blob.NewBucket(&bucket{b: b, sw: sw})
}

type bucket struct {
	b  *blob.Bucket
	sw *Switch
}

var _ driver.Bucket = (*bucket)(nil)

// ErrorCode: errors of b carry their code already (the blob package takes it
// before asking the driver); an injected fault has none, so it is Unknown.
func (d *bucket) ErrorCode(err error) gcerrors.ErrorCode { return gcerrors.Code(err) }

func (d *bucket) As(i any) bool                 { return d.b.As(i) }
func (d *bucket) ErrorAs(err error, i any) bool { return d.b.ErrorAs(err, i) }

func (d *bucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	if err := d.sw.check(); err != nil {
		return nil, err
	}
	a, err := d.b.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{
		CacheControl:       a.CacheControl,
		ContentDisposition: a.ContentDisposition,
		ContentEncoding:    a.ContentEncoding,
		ContentLanguage:    a.ContentLanguage,
		ContentType:        a.ContentType,
		Metadata:           a.Metadata,
		CreateTime:         a.CreateTime,
		ModTime:            a.ModTime,
		Size:               a.Size,
		MD5:                a.MD5,
		ETag:               a.ETag,
		AsFunc:             a.As, // e.g. fileblob's os.FileInfo
	}, nil
}

// listPageSize stands in for "no maximum" (PageSize 0), which blob's ListPage
// does not accept.
const listPageSize = 1000

func (d *bucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	if err := d.sw.check(); err != nil {
		return nil, err
	}
	if f := d.sw.lists.Load(); f != nil {
		(*f)(opts.Prefix, opts.Delimiter)
	}
	token := opts.PageToken
	if len(token) == 0 {
		token = blob.FirstPageToken // drivers start at nil, ListPage at FirstPageToken
	}
	size := opts.PageSize
	if size <= 0 {
		size = listPageSize
	}
	objs, next, err := d.b.ListPage(ctx, token, size, &blob.ListOptions{
		Prefix:     opts.Prefix,
		Delimiter:  opts.Delimiter,
		BeforeList: opts.BeforeList,
	})
	if err != nil {
		return nil, err
	}
	page := &driver.ListPage{Objects: make([]*driver.ListObject, len(objs)), NextPageToken: next}
	for i, o := range objs {
		page.Objects[i] = &driver.ListObject{Key: o.Key, ModTime: o.ModTime, Size: o.Size, MD5: o.MD5, IsDir: o.IsDir, AsFunc: o.As}
	}
	return page, nil
}

func (d *bucket) NewRangeReader(ctx context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	if err := d.sw.check(); err != nil {
		return nil, err
	}
	r, err := d.b.NewRangeReader(ctx, key, offset, length, &blob.ReaderOptions{BeforeRead: opts.BeforeRead})
	if err != nil {
		return nil, err
	}
	return &reader{r: r, sw: d.sw}, nil
}

func (d *bucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	if err := d.sw.check(); err != nil {
		return nil, err
	}
	// Our own cancel, so that Close can abort the inner write.
	ctx, cancel := context.WithCancel(ctx)
	w, err := d.b.NewWriter(ctx, key, &blob.WriterOptions{
		BufferSize:         opts.BufferSize,
		MaxConcurrency:     opts.MaxConcurrency,
		CacheControl:       opts.CacheControl,
		ContentDisposition: opts.ContentDisposition,
		ContentEncoding:    opts.ContentEncoding,
		ContentLanguage:    opts.ContentLanguage,
		// The blob package has sniffed the type already; "" means detection
		// is disabled, which the inner bucket must keep.
		ContentType:                 contentType,
		DisableContentTypeDetection: contentType == "",
		ContentMD5:                  opts.ContentMD5,
		Metadata:                    opts.Metadata,
		BeforeWrite:                 opts.BeforeWrite,
		IfNotExist:                  opts.IfNotExist,
	})
	if err != nil {
		cancel()
		return nil, err
	}
	return &writer{w: w, cancel: cancel, sw: d.sw}, nil
}

func (d *bucket) Copy(ctx context.Context, dstKey, srcKey string, opts *driver.CopyOptions) error {
	if err := d.sw.check(); err != nil {
		return err
	}
	return d.b.Copy(ctx, dstKey, srcKey, &blob.CopyOptions{BeforeCopy: opts.BeforeCopy})
}

func (d *bucket) Delete(ctx context.Context, key string) error {
	if err := d.sw.check(); err != nil {
		return err
	}
	return d.b.Delete(ctx, key)
}

func (d *bucket) SignedURL(ctx context.Context, key string, opts *driver.SignedURLOptions) (string, error) {
	if err := d.sw.check(); err != nil {
		return "", err
	}
	return d.b.SignedURL(ctx, key, &blob.SignedURLOptions{
		Expiry:                   opts.Expiry,
		Method:                   opts.Method,
		ContentType:              opts.ContentType,
		EnforceAbsentContentType: opts.EnforceAbsentContentType,
		BeforeSign:               opts.BeforeSign,
	})
}

// Close is never faulted: an outage does not stop a client from releasing
// its resources, and tests close their stores in cleanup.
func (d *bucket) Close() error { return d.b.Close() }

type reader struct {
	r  *blob.Reader
	sw *Switch
}

func (r *reader) Read(p []byte) (int, error) {
	if err := r.sw.check(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// Close releases the inner reader even during an outage (see bucket.Close).
func (r *reader) Close() error { return r.r.Close() }

func (r *reader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{ContentType: r.r.ContentType(), ModTime: r.r.ModTime(), Size: r.r.Size()}
}

func (r *reader) As(i any) bool { return r.r.As(i) }

type writer struct {
	w      *blob.Writer
	cancel context.CancelFunc
	sw     *Switch
	failed error // the first injected fault: the write can no longer complete
}

func (w *writer) Write(p []byte) (int, error) {
	if w.failed == nil {
		w.failed = w.sw.check()
	}
	if w.failed != nil {
		return 0, w.failed
	}
	return w.w.Write(p)
}

// Close publishes the object unless the switch is on now or was on during a
// Write (bytes were lost, so publishing would store a truncated object); then
// it aborts the inner write, as a driver does when its upload fails.
func (w *writer) Close() error {
	defer w.cancel()
	err := w.failed
	if err == nil {
		err = w.sw.check()
	}
	if err != nil {
		w.cancel() // a canceled writer's Close aborts the write
		_ = w.w.Close()
		return err
	}
	return w.w.Close()
}
