package mount

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"sync"

	"gocloud.dev/blob"
)

// Streaming sizes: content moves in chunks of copyBuffer bytes; object-store
// uploads buffer at most one part (S3 parts cannot be smaller than 5 MiB).
const (
	copyBuffer   = 1 << 20
	s3PartSize   = 5 << 20
	gcsChunkSize = 1 << 20 // a multiple of 256 KiB, as GCS requires
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, copyBuffer); return &b }}

// attrs returns the object's attributes; on file:// mounts they must be
// those of the file in the task's space.
func (m mnt) attrs(ctx context.Context, pl place) (*blob.Attributes, error) {
	a, err := m.b.Attributes(ctx, pl.key)
	if err != nil {
		if m.isNotFound(err) {
			return nil, notFound(pl.ref, "")
		}
		return nil, fmt.Errorf("mount: %s: attributes: %w", pl.ref, err)
	}
	if pl.file != nil {
		if err := pl.file.sameAttrs(a); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// reader opens the object; on file:// mounts the file opened must be the
// one in the task's space.
func (m mnt) reader(ctx context.Context, pl place) (*blob.Reader, error) {
	var opts *blob.ReaderOptions
	if pl.file != nil {
		opts = &blob.ReaderOptions{BeforeRead: pl.file.beforeRead}
	}
	r, err := m.b.NewReader(ctx, pl.key, opts)
	if err != nil {
		if m.isNotFound(err) {
			return nil, notFound(pl.ref, "")
		}
		return nil, fmt.Errorf("mount: %s: open: %w", pl.ref, err)
	}
	return r, nil
}

// hash reads the object through and returns its length and sha256.
func (m mnt) hash(ctx context.Context, pl place, p *progress) (int64, []byte, error) {
	r, err := m.reader(ctx, pl)
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
			return n, nil, fmt.Errorf("mount: %s: read: %w", pl.ref, err)
		}
	}
}

// write streams r into the object. Once r is exhausted, check (if set)
// decides whether the object is published; on any failure the write is
// aborted and nothing is published (fileblob writes a temporary file beside
// the target and renames it; object stores abort the upload). On file://
// mounts the folders are made through the task space's Root first and the
// temporary file must lie in them.
func (m mnt) write(ctx context.Context, pl place, opts *blob.WriterOptions, r io.Reader, p *progress, check func(n int64, sum []byte) error) (int64, []byte, error) {
	if pl.file != nil {
		if err := pl.file.makeFolders(); err != nil {
			return 0, nil, err
		}
		opts.BeforeWrite = pl.file.beforeWrite
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := m.b.NewWriter(wctx, pl.key, opts)
	if err != nil {
		return 0, nil, fmt.Errorf("mount: %s: write: %w", pl.ref, err)
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
				err = fmt.Errorf("mount: %s: write: %w", pl.ref, werr)
				break
			}
			n += int64(k)
			p.add(k)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			err = fmt.Errorf("mount: %s: read source: %w", pl.ref, rerr)
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
		return n, nil, fmt.Errorf("mount: %s: write: %w", pl.ref, err)
	}
	return n, sum, nil
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
