package transcript

import (
	"context"
	"errors"
	"testing"

	"gocloud.dev/blob"

	"github.com/agenttask/agenttask/internal/faultblob"
)

// During a storage outage Write fails with the storage fault (not a
// conflict), and once storage is back the same Write succeeds.
func TestOpenWithOutage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sw := &faultblob.Switch{}
	s, err := OpenWith(ctx, dir, func(b *blob.Bucket) *blob.Bucket { return faultblob.Wrap(b, sw) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	entries := msgs(0, 3, 10)

	sw.On(nil)
	err = s.Write(ctx, key, 0, entries)
	if err == nil {
		t.Fatal("Write succeeded during the outage")
	}
	if !faultblob.IsInjected(err) || errors.Is(err, ErrConflict) {
		t.Fatalf("Write during the outage: %v, want the injected fault", err)
	}

	sw.Off()
	if err := s.Write(ctx, key, 0, entries); err != nil {
		t.Fatalf("Write after the outage: %v", err)
	}
	fresh, err := Open(ctx, dir) // no cache: reads the folder
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fresh.Close() })
	got, err := fresh.Read(ctx, key, 0, len(entries))
	if err != nil {
		t.Fatal(err)
	}
	if encode(t, got) != encode(t, entries) {
		t.Fatalf("read back %s, wrote %s", encode(t, got), encode(t, entries))
	}
}
