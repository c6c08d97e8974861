package codec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

// BlobMagic starts every object WrapBucket writes. An object that does not
// start with it is read as it is: stores written before encryption was
// turned on (or during a rollout, by workers without keys) stay readable.
// The transcript's objects are JSON, which never starts with a NUL byte.
//
// An encrypted object is
//
//	"\x00ATENC1" || len(key id) (1 byte) || key id || 12-byte nonce || AES-256-GCM seal of the object (no additional data)
var BlobMagic = []byte("\x00ATENC1")

// SealBlob encrypts data with the current key in the object format above.
func (c *Codec) SealBlob(data []byte) ([]byte, error) {
	sealed, err := c.seal(c.current, data)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(BlobMagic)+1+len(c.current)+len(sealed))
	out = append(out, BlobMagic...)
	out = append(out, byte(len(c.current)))
	out = append(out, c.current...)
	return append(out, sealed...), nil
}

// OpenBlob decrypts an object SealBlob wrote, with the key it names; data
// without BlobMagic is returned as it is.
func (c *Codec) OpenBlob(data []byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(data, BlobMagic)
	if !ok {
		return data, nil
	}
	if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
		return nil, errors.New("codec: encrypted object is truncated")
	}
	id := string(rest[1 : 1+int(rest[0])])
	return c.open(id, rest[1+int(rest[0]):])
}

// WrapBucket returns a bucket that encrypts every object written through it
// with the current key and decrypts every object read through it (objects
// without BlobMagic are read as they are). Reads load the whole object.
// Sizes that listings and Attributes report are the stored sizes. Closing
// it closes b. A nil codec returns b.
func (c *Codec) WrapBucket(b *blob.Bucket) *blob.Bucket {
	if c == nil {
		return b
	}
	return blob.NewBucket(&cryptBucket{b: b, c: c})
}

type cryptBucket struct {
	b *blob.Bucket
	c *Codec
}

var _ driver.Bucket = (*cryptBucket)(nil)

// ErrorCode: errors of b carry their code already; the codec's own are Unknown.
func (d *cryptBucket) ErrorCode(err error) gcerrors.ErrorCode { return gcerrors.Code(err) }

func (d *cryptBucket) As(i any) bool                 { return d.b.As(i) }
func (d *cryptBucket) ErrorAs(err error, i any) bool { return d.b.ErrorAs(err, i) }

func (d *cryptBucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
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
		ETag:               a.ETag,
		AsFunc:             a.As,
	}, nil
}

func (d *cryptBucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	token := opts.PageToken
	if len(token) == 0 {
		token = blob.FirstPageToken
	}
	size := opts.PageSize
	if size <= 0 {
		size = 1000
	}
	objs, next, err := d.b.ListPage(ctx, token, size, &blob.ListOptions{Prefix: opts.Prefix, Delimiter: opts.Delimiter, BeforeList: opts.BeforeList})
	if err != nil {
		return nil, err
	}
	page := &driver.ListPage{Objects: make([]*driver.ListObject, len(objs)), NextPageToken: next}
	for i, o := range objs {
		page.Objects[i] = &driver.ListObject{Key: o.Key, ModTime: o.ModTime, Size: o.Size, IsDir: o.IsDir, AsFunc: o.As}
	}
	return page, nil
}

func (d *cryptBucket) NewRangeReader(ctx context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	r, err := d.b.NewReader(ctx, key, &blob.ReaderOptions{BeforeRead: opts.BeforeRead})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	stored, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	data, err := d.c.OpenBlob(stored)
	if err != nil {
		return nil, fmt.Errorf("object %q: %w", key, err)
	}
	size := int64(len(data))
	if offset > size {
		offset = size
	}
	end := size
	if length >= 0 && offset+length < size {
		end = offset + length
	}
	return &plainReader{
		r:     bytes.NewReader(data[offset:end]),
		attrs: driver.ReaderAttributes{ContentType: r.ContentType(), ModTime: r.ModTime(), Size: size},
		as:    r.As,
	}, nil
}

type plainReader struct {
	r     *bytes.Reader
	attrs driver.ReaderAttributes
	as    func(any) bool
}

func (r *plainReader) Read(p []byte) (int, error)           { return r.r.Read(p) }
func (r *plainReader) Close() error                         { return nil }
func (r *plainReader) Attributes() *driver.ReaderAttributes { return &r.attrs }
func (r *plainReader) As(i any) bool                        { return r.as(i) }

func (d *cryptBucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	wo := &blob.WriterOptions{
		BufferSize:         opts.BufferSize,
		MaxConcurrency:     opts.MaxConcurrency,
		CacheControl:       opts.CacheControl,
		ContentDisposition: opts.ContentDisposition,
		ContentEncoding:    opts.ContentEncoding,
		ContentLanguage:    opts.ContentLanguage,
		// The blob package has sniffed the type of the plain bytes already.
		ContentType:                 contentType,
		DisableContentTypeDetection: contentType == "",
		// ContentMD5 is the plain bytes' and would not match what is stored.
		Metadata:    opts.Metadata,
		BeforeWrite: opts.BeforeWrite,
		IfNotExist:  opts.IfNotExist,
	}
	return &sealWriter{ctx: ctx, d: d, key: key, opts: wo}, nil
}

// sealWriter buffers the object and writes it encrypted on Close (AES-GCM
// seals a whole message).
type sealWriter struct {
	ctx  context.Context
	d    *cryptBucket
	key  string
	opts *blob.WriterOptions
	buf  bytes.Buffer
}

func (w *sealWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }

func (w *sealWriter) Close() error {
	if err := w.ctx.Err(); err != nil {
		return err // a canceled write publishes nothing
	}
	sealed, err := w.d.c.SealBlob(w.buf.Bytes())
	if err != nil {
		return err
	}
	return w.d.b.WriteAll(w.ctx, w.key, sealed, w.opts)
}

func (d *cryptBucket) Copy(ctx context.Context, dstKey, srcKey string, opts *driver.CopyOptions) error {
	return d.b.Copy(ctx, dstKey, srcKey, &blob.CopyOptions{BeforeCopy: opts.BeforeCopy})
}

func (d *cryptBucket) Delete(ctx context.Context, key string) error { return d.b.Delete(ctx, key) }

func (d *cryptBucket) SignedURL(ctx context.Context, key string, opts *driver.SignedURLOptions) (string, error) {
	return "", errors.New("codec: an encrypted bucket gives no signed URLs (they would serve the encrypted bytes)")
}

func (d *cryptBucket) Close() error { return d.b.Close() }
