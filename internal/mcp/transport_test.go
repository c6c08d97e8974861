package mcp

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// failingReader yields its text, then err.
type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

func TestBoundedBodyEndsTheOperationWhenTheStreamBreaks(t *testing.T) {
	ctx, obs, cancel := observe(context.Background())
	defer cancel()
	b := &boundedBody{body: io.NopCloser(&failingReader{strings.NewReader("event: message\n"), io.ErrUnexpectedEOF}), left: 1 << 20, obs: obs}
	if _, err := io.ReadAll(b); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read: %v", err)
	}
	if ctx.Err() == nil {
		t.Fatal("the operation's context is not cancelled")
	}
	if seen := obs.snapshot(); !errors.Is(seen.transportErr, io.ErrUnexpectedEOF) || seen.staleConn {
		t.Fatalf("observed %+v", seen)
	}
	if err := classify(context.Background(), "s", context.Canceled, obs); !IsOutage(err) {
		t.Fatalf("classified as %v", err)
	}
}

func TestBoundedBodyStopsAtTheBound(t *testing.T) {
	ctx, obs, cancel := observe(context.Background())
	defer cancel()
	b := &boundedBody{body: io.NopCloser(strings.NewReader(strings.Repeat("x", 101))), left: 100, obs: obs}
	data, err := io.ReadAll(b)
	if !errors.Is(err, errResponseTooLarge) || len(data) != 100 || ctx.Err() == nil || !obs.snapshot().oversize {
		t.Fatalf("read %d bytes, %v, ctx %v", len(data), err, ctx.Err())
	}
	// A body of exactly the bound is read whole.
	_, obs, cancel = observe(context.Background())
	defer cancel()
	b = &boundedBody{body: io.NopCloser(strings.NewReader(strings.Repeat("x", 100))), left: 100, obs: obs}
	if data, err := io.ReadAll(b); err != nil || len(data) != 100 || obs.snapshot().oversize {
		t.Fatalf("exactly the bound: %d bytes, %v", len(data), err)
	}
}
