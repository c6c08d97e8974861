package faultblob

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"io"
	"os"
	"slices"
	"sync"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/gcerrors"
)

// open wraps a fileblob bucket (sidecar metadata, so it keeps an MD5) and
// returns the wrapper and the inner bucket, to compare what each reports.
func open(t *testing.T) (*blob.Bucket, *blob.Bucket, *Switch) {
	t.Helper()
	inner, err := fileblob.OpenBucket(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sw := &Switch{}
	b := Wrap(inner, sw)
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b, inner, sw
}

func put(t *testing.T, b *blob.Bucket, key, content string) {
	t.Helper()
	if err := b.WriteAll(context.Background(), key, []byte(content), nil); err != nil {
		t.Fatalf("WriteAll %s: %v", key, err)
	}
}

func get(t *testing.T, b *blob.Bucket, key string) string {
	t.Helper()
	data, err := b.ReadAll(context.Background(), key)
	if err != nil {
		t.Fatalf("ReadAll %s: %v", key, err)
	}
	return string(data)
}

func keys(t *testing.T, b *blob.Bucket, opts *blob.ListOptions) []string {
	t.Helper()
	var out []string
	it := b.List(opts)
	for {
		o, err := it.Next(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		out = append(out, o.Key)
	}
}

func wantCode(t *testing.T, what string, err error, code gcerrors.ErrorCode) {
	t.Helper()
	if got := gcerrors.Code(err); got != code {
		t.Fatalf("%s: error %v: code %v, want %v", what, err, got, code)
	}
}

func TestOffDelegates(t *testing.T) {
	ctx := context.Background()
	b, inner, _ := open(t)

	content := "hello, storage"
	sum := md5.Sum([]byte(content))
	err := b.WriteAll(ctx, "a/x.txt", []byte(content), &blob.WriterOptions{
		ContentType:  "text/plain",
		CacheControl: "no-cache",
		Metadata:     map[string]string{"Sha256": "abc"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, b, "a/x.txt"); got != content {
		t.Fatalf("read %q, want %q", got, content)
	}

	// Attributes: what the inner bucket reports, the driver's types included.
	a, err := b.Attributes(ctx, "a/x.txt")
	if err != nil {
		t.Fatal(err)
	}
	ia, err := inner.Attributes(ctx, "a/x.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.MD5, sum[:]) || a.ETag == "" || a.ETag != ia.ETag || !a.ModTime.Equal(ia.ModTime) ||
		a.Size != int64(len(content)) || a.ContentType != "text/plain" || a.CacheControl != "no-cache" ||
		a.Metadata["sha256"] != "abc" {
		t.Fatalf("attributes %+v, inner %+v", a, ia)
	}
	var fi os.FileInfo
	if !a.As(&fi) || fi.Size() != int64(len(content)) {
		t.Fatalf("Attributes.As(*os.FileInfo) = %v", fi)
	}

	// A range reader and its attributes.
	r, err := b.NewRangeReader(ctx, "a/x.txt", 7, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	part, err := io.ReadAll(r)
	r.Close()
	if err != nil || string(part) != "stora" {
		t.Fatalf("range read %q, %v", part, err)
	}
	if r.Size() != int64(len(content)) || r.ContentType() != "text/plain" || !r.ModTime().Equal(ia.ModTime) {
		t.Fatalf("reader attributes: size %d, type %q, modified %v", r.Size(), r.ContentType(), r.ModTime())
	}

	// Content type detection, and its absence, survive the wrapper.
	put(t, b, "a/y.html", "<html><body>hi</body></html>")
	if a, err := b.Attributes(ctx, "a/y.html"); err != nil || a.ContentType != "text/html; charset=utf-8" {
		t.Fatalf("sniffed type: %v, %v", a, err)
	}

	// List: flat, paged, by directory.
	put(t, b, "b/z.txt", "z")
	if got, want := keys(t, b, nil), []string{"a/x.txt", "a/y.html", "b/z.txt"}; !slices.Equal(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
	if got, want := keys(t, b, &blob.ListOptions{Delimiter: "/"}), []string{"a/", "b/"}; !slices.Equal(got, want) {
		t.Fatalf("List by directory = %v, want %v", got, want)
	}
	var paged []string
	for token := blob.FirstPageToken; len(token) > 0; {
		objs, next, err := b.ListPage(ctx, token, 2, &blob.ListOptions{Prefix: "a/"})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			paged = append(paged, o.Key)
		}
		token = next
	}
	if want := []string{"a/x.txt", "a/y.html"}; !slices.Equal(paged, want) {
		t.Fatalf("ListPage = %v, want %v", paged, want)
	}

	// Copy and Delete.
	if err := b.Copy(ctx, "c/copy.txt", "a/x.txt", nil); err != nil {
		t.Fatal(err)
	}
	if got := get(t, b, "c/copy.txt"); got != content {
		t.Fatalf("copy holds %q", got)
	}
	if err := b.Delete(ctx, "c/copy.txt"); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Exists(ctx, "c/copy.txt"); ok || err != nil {
		t.Fatalf("Exists after Delete = %v, %v", ok, err)
	}

	// The inner bucket's codes pass through: NotFound stays NotFound, and a
	// conditional write over an existing object is FailedPrecondition.
	_, err = b.Attributes(ctx, "missing")
	wantCode(t, "Attributes of a missing key", err, gcerrors.NotFound)
	_, err = b.NewReader(ctx, "missing", nil)
	wantCode(t, "NewReader of a missing key", err, gcerrors.NotFound)
	wantCode(t, "Delete of a missing key", b.Delete(ctx, "missing"), gcerrors.NotFound)
	wantCode(t, "Copy of a missing key", b.Copy(ctx, "dst", "missing", nil), gcerrors.NotFound)
	err = b.WriteAll(ctx, "a/x.txt", []byte("other"), &blob.WriterOptions{IfNotExist: true})
	wantCode(t, "conditional write", err, gcerrors.FailedPrecondition)
	if IsInjected(err) {
		t.Fatalf("%v: IsInjected with the switch off", err)
	}
}

func TestOnFailsEverything(t *testing.T) {
	ctx := context.Background()
	b, inner, sw := open(t)
	put(t, b, "k", "content")

	// Opened before the outage: their next Read and Write fail too.
	r, err := b.NewReader(ctx, "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := b.NewWriter(ctx, "half", &blob.WriterOptions{ContentType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("first ")); err != nil {
		t.Fatal(err)
	}

	sw.On(nil)
	if !sw.Active() {
		t.Fatal("Active = false after On")
	}
	ops := []struct {
		name string
		run  func() error
	}{
		{"Attributes", func() error { _, err := b.Attributes(ctx, "k"); return err }},
		{"Attributes of a missing key", func() error { _, err := b.Attributes(ctx, "missing"); return err }},
		{"NewReader", func() error { _, err := b.NewReader(ctx, "k", nil); return err }},
		{"Read", func() error { _, err := r.Read(make([]byte, 4)); return err }},
		{"WriteAll", func() error { return b.WriteAll(ctx, "new", []byte("x"), nil) }},
		{"Write", func() error { _, err := w.Write([]byte("second")); return err }},
		{"List", func() error { _, err := b.List(nil).Next(ctx); return err }},
		{"Copy", func() error { return b.Copy(ctx, "copy", "k", nil) }},
		{"Delete", func() error { return b.Delete(ctx, "k") }},
		{"SignedURL", func() error { _, err := b.SignedURL(ctx, "k", nil); return err }},
	}
	for i, op := range ops {
		err := op.run()
		wantCode(t, op.name, err, gcerrors.Unknown)
		if !IsInjected(err) || !errors.Is(err, ErrUnavailable) {
			t.Fatalf("%s: error %v is not the injected fault", op.name, err)
		}
		if got := sw.Failures(); got != i+1 {
			t.Fatalf("after %s: Failures = %d, want %d", op.name, got, i+1)
		}
	}
	// The writer lost bytes: it publishes nothing, even once storage is back.
	sw.Off()
	if err := w.Close(); !IsInjected(err) {
		t.Fatalf("Close of a writer that failed: %v", err)
	}
	if ok, err := inner.Exists(ctx, "half"); ok || err != nil {
		t.Fatalf("a failed write was published: %v, %v", ok, err)
	}

	// Off: everything works again, the reader where it was.
	if sw.Active() {
		t.Fatal("Active = true after Off")
	}
	n := sw.Failures()
	if rest, err := io.ReadAll(r); err != nil || string(rest) != "content" {
		t.Fatalf("Read after Off: %q, %v", rest, err)
	}
	put(t, b, "new", "x")
	if got := get(t, b, "k"); got != "content" {
		t.Fatalf("read %q after Off", got)
	}
	if err := b.Copy(ctx, "copy", "k", nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "copy"); err != nil {
		t.Fatal(err)
	}
	if sw.Failures() != n {
		t.Fatalf("Failures moved from %d to %d with the switch off", n, sw.Failures())
	}
}

// A writer whose Close comes during the outage publishes nothing.
func TestOnAtClose(t *testing.T) {
	ctx := context.Background()
	b, inner, sw := open(t)
	w, err := b.NewWriter(ctx, "k", &blob.WriterOptions{ContentType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("all of it")); err != nil {
		t.Fatal(err)
	}
	sw.On(nil)
	if err := w.Close(); !IsInjected(err) {
		t.Fatalf("Close during the outage: %v", err)
	}
	sw.Off()
	if ok, err := inner.Exists(ctx, "k"); ok || err != nil {
		t.Fatalf("published during the outage: %v, %v", ok, err)
	}
}

// The fault wraps the caller's error for errors.Is but never takes its code:
// even a NotFound error injected stays a storage fault.
func TestOnWithError(t *testing.T) {
	ctx := context.Background()
	b, _, sw := open(t)
	put(t, b, "k", "content")

	errDown := errors.New("connection refused")
	sw.On(errDown)
	_, err := b.Attributes(ctx, "k")
	wantCode(t, "Attributes", err, gcerrors.Unknown)
	if !errors.Is(err, errDown) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("error %v does not wrap only the given error", err)
	}

	sw.Off()
	_, notFound := b.Attributes(ctx, "missing")
	wantCode(t, "Attributes of a missing key", notFound, gcerrors.NotFound)
	sw.On(notFound)
	_, err = b.Attributes(ctx, "k")
	wantCode(t, "Attributes with a NotFound injected", err, gcerrors.Unknown)
}

// One switch, many goroutines (run with -race).
func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	b, _, sw := open(t)
	put(t, b, "k", "content")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				if (i+j)%7 == 0 {
					sw.On(nil)
				} else if (i+j)%7 == 3 {
					sw.Off()
				}
				_, err := b.ReadAll(ctx, "k")
				if err != nil && !IsInjected(err) {
					t.Errorf("ReadAll: %v", err)
				}
			}
		})
	}
	wg.Wait()
	sw.Off()
	if got := get(t, b, "k"); got != "content" {
		t.Fatalf("read %q", got)
	}
}
