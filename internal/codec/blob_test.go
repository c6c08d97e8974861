package codec

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/transcript"
)

// The transcript store over an encrypted bucket: entries, links and stash
// objects are stored encrypted, read back plain, rewriting the same entry
// still succeeds and a different one still conflicts, and a store written
// before encryption stays readable.
func TestTranscriptOverEncryptedBucket(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	k := newKey(t)
	c := mustCodec(t, Keys{"k1": k}, "k1")
	key := transcript.Key{TaskID: "task-1", FirstRunID: "run-1"}

	// A plaintext store first (no keys), as before a rollout.
	plainStore, err := transcript.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	entry := func(s string) contract.Message {
		return contract.Message{Type: contract.TypeInput, TaskIO: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(s)}}}
	}
	if err := plainStore.Write(ctx, key, 0, []contract.Message{entry("plain entry c0ffee")}); err != nil {
		t.Fatal(err)
	}
	plainStore.Close()

	s, err := transcript.OpenWith(ctx, dir, c.WrapBucket)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(ctx, key, 1, []contract.Message{entry("secret entry beef42")}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutJSON(ctx, key, "carry", map[string]string{"v": "secret stash beef42"}); err != nil {
		t.Fatal(err)
	}
	fresh, err := transcript.OpenWith(ctx, dir, c.WrapBucket) // no cache
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	got, err := fresh.Read(ctx, key, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if *got[0].Message[0].Text != "plain entry c0ffee" || *got[1].Message[0].Text != "secret entry beef42" {
		t.Fatalf("read %+v", got)
	}
	var v map[string]string
	if err := fresh.GetJSON(ctx, key, "carry", &v); err != nil || v["v"] != "secret stash beef42" {
		t.Fatalf("stash %v %v", v, err)
	}
	// Idempotent rewrite compares plain entries, not random ciphertexts.
	if err := fresh.Write(ctx, key, 1, []contract.Message{entry("secret entry beef42")}); err != nil {
		t.Fatalf("rewriting the same entry: %v", err)
	}
	if err := fresh.Write(ctx, key, 1, []contract.Message{entry("another")}); !errors.Is(err, transcript.ErrConflict) {
		t.Fatalf("a different entry: %v, want ErrConflict", err)
	}
	// Nothing on disk holds the encrypted texts.
	n := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		if bytes.Contains(b, []byte("beef42")) {
			t.Errorf("%s holds the plain text", p)
		}
		return nil
	})
	if err != nil || n < 3 {
		t.Fatalf("walked %d files: %v", n, err)
	}
}
