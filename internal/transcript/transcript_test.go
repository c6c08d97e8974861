package transcript

import (
	"github.com/agenttask/agenttask/internal/blobkey"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/memblob"

	"github.com/agenttask/agenttask/contract"
)

// backends runs f against a memory bucket and a local folder.
func backends(t *testing.T, f func(t *testing.T, open func() *Store)) {
	t.Run("mem", func(t *testing.T) {
		b := memblob.OpenBucket(nil)
		t.Cleanup(func() { b.Close() })
		// Each open is a fresh Store (empty cache) over the same bucket.
		f(t, func() *Store { return NewFromBucket(b) })
	})
	t.Run("file", func(t *testing.T) {
		dir := t.TempDir()
		f(t, func() *Store {
			s, err := Open(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}

func msg(i int, pad int) contract.Message {
	typ := contract.TypeInput
	if i%2 == 1 {
		typ = contract.TypeOutput
	}
	m := contract.Message{Type: typ, TaskIO: contract.TaskIO{
		Message:     []contract.ContentPart{contract.TextPart(fmt.Sprintf("entry %d %s", i, strings.Repeat("x", pad)))},
		CommittedAt: "2026-01-02T03:04:05.000000Z",
		Values: map[string]json.RawMessage{
			"n":      json.RawMessage(fmt.Sprint(i)),
			"nested": json.RawMessage(`{"b":[1,2,{"c":null}],"a":"é<>"}`),
		},
	}}
	if typ == contract.TypeInput {
		m.ReceivedAt = "2026-01-02T03:04:04.000000Z"
	}
	return m
}

func msgs(from, to, pad int) []contract.Message {
	var out []contract.Message
	for i := from; i < to; i++ {
		out = append(out, msg(i, pad))
	}
	return out
}

func encode(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var key = Key{TaskID: "task-1", FirstRunID: "0f8e2a9c-1111-2222-3333-444455556666"}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	backends(t, func(t *testing.T, open func() *Store) {
		want := msgs(0, 30, 10)
		if err := open().Write(ctx, key, 0, want); err != nil {
			t.Fatal(err)
		}
		for _, s := range []*Store{open(), open()} { // cold, then again cold
			got, err := s.Read(ctx, key, 0, len(want))
			if err != nil {
				t.Fatal(err)
			}
			if encode(t, got) != encode(t, want) {
				t.Fatalf("round trip differs:\n got %s\nwant %s", encode(t, got), encode(t, want))
			}
			if got[3].Values["nested"] == nil || got[3].Type != contract.TypeOutput {
				t.Fatalf("dynamic keys or type lost: %+v", got[3])
			}
			sub, err := s.Read(ctx, key, 7, 9)
			if err != nil || encode(t, sub) != encode(t, want[7:9]) {
				t.Fatalf("sub-range: %v %s", err, encode(t, sub))
			}
			if empty, err := s.Read(ctx, key, 5, 5); err != nil || len(empty) != 0 {
				t.Fatalf("empty range: %v %v", empty, err)
			}
		}
		if _, err := open().Read(ctx, key, 3, 2); err == nil {
			t.Error("inverted range accepted")
		}
	})
}

func TestStoredFormIsFlat(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	if err := NewFromBucket(b).Write(ctx, key, 0, msgs(0, 1, 0)); err != nil {
		t.Fatal(err)
	}
	raw, err := b.ReadAll(ctx, "tasks/task-1/0f8e2a9c-1111-2222-3333-444455556666/entries/0000000000.json")
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"type", "message", "received_at", "committed_at", "n", "nested"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("stored entry lacks top-level %q: %s", k, raw)
		}
	}
}

func TestIdempotentRewrite(t *testing.T) {
	ctx := context.Background()
	backends(t, func(t *testing.T, open func() *Store) {
		s := open()
		if err := s.Write(ctx, key, 0, msgs(0, 4, 5)); err != nil {
			t.Fatal(err)
		}
		// Same entries again: from the cache, from storage, and overlapping new ones.
		if err := s.Write(ctx, key, 0, msgs(0, 4, 5)); err != nil {
			t.Fatalf("cached rewrite: %v", err)
		}
		if err := open().Write(ctx, key, 0, msgs(0, 4, 5)); err != nil {
			t.Fatalf("stored rewrite: %v", err)
		}
		if err := open().Write(ctx, key, 2, msgs(2, 6, 5)); err != nil {
			t.Fatalf("overlapping rewrite: %v", err)
		}
		// Semantically equal JSON written differently is the same entry.
		m := msg(1, 5)
		m.Values["nested"] = json.RawMessage(` { "a" : "é<>", "b":[1, 2, {"c":null}] }`)
		if err := open().Write(ctx, key, 1, []contract.Message{m}); err != nil {
			t.Fatalf("equivalent rewrite: %v", err)
		}

		// A different entry at a stored position is refused, cached or not.
		for _, s := range []*Store{s, open()} {
			err := s.Write(ctx, key, 1, []contract.Message{msg(99, 5)})
			var pe *PositionError
			if !errors.Is(err, ErrConflict) || !errors.As(err, &pe) || pe.Position != 1 {
				t.Fatalf("conflicting write: %v", err)
			}
		}
		got, err := open().Read(ctx, key, 0, 6)
		if err != nil {
			t.Fatal(err)
		}
		if encode(t, got) != encode(t, msgs(0, 6, 5)) {
			t.Fatalf("transcript changed by a refused write: %s", encode(t, got))
		}
	})
}

func TestMissingPosition(t *testing.T) {
	ctx := context.Background()
	backends(t, func(t *testing.T, open func() *Store) {
		s := open()
		all := msgs(0, 5, 0)
		if err := s.Write(ctx, key, 0, all[:2]); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, key, 3, all[3:]); err != nil {
			t.Fatal(err)
		}
		_, err := s.Read(ctx, key, 0, 5)
		var pe *PositionError
		if !errors.Is(err, ErrNotFound) || !errors.As(err, &pe) || pe.Position != 2 || pe.Key != key {
			t.Fatalf("err = %v, want position 2 not found", err)
		}
		if !strings.Contains(err.Error(), "position 2") {
			t.Errorf("error does not name the position: %v", err)
		}
		if _, err := open().Read(ctx, Key{TaskID: "other", FirstRunID: "r"}, 0, 1); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown transcript: %v", err)
		}
	})
}

// bruteWindow is Window's specification, from the entries' encoded sizes.
func bruteWindow(sizes []int, end, budget int) int {
	first, total := end, len("[]")
	for first > 0 {
		add := sizes[first-1]
		if first < end {
			add++ // comma
		}
		if total+add > budget {
			break
		}
		total += add
		first--
	}
	return first
}

func encodeList(t testing.TB, v []contract.Message) []byte {
	t.Helper()
	if len(v) == 0 {
		return []byte("[]")
	}
	return []byte(encode(t, v))
}

func TestWindow(t *testing.T) {
	ctx := context.Background()
	backends(t, func(t *testing.T, open func() *Store) {
		var all []contract.Message
		for i := range 600 {
			all = append(all, msg(i, (i*37)%300)) // varied sizes
		}
		if err := open().Write(ctx, key, 0, all); err != nil {
			t.Fatal(err)
		}
		sizes := make([]int, len(all))
		for i, m := range all {
			sizes[i] = len(encode(t, m))
		}
		// The size model matches encoding/json's encoding of a list.
		for _, r := range [][2]int{{0, 600}, {599, 600}, {3, 77}} {
			if n := len(encodeList(t, all[r[0]:r[1]])); bruteWindow(sizes, r[1], n) != r[0] || bruteWindow(sizes, r[1], n-1) != r[0]+1 {
				t.Fatalf("size model wrong for %v", r)
			}
		}
		s := open()
		check := func(end, budget int) {
			t.Helper()
			first, got, err := s.Window(ctx, key, end, budget)
			if err != nil {
				t.Fatal(err)
			}
			want := bruteWindow(sizes, end, budget)
			if first != want || len(got) != end-first {
				t.Fatalf("Window(end=%d, budget=%d) = first %d (%d entries), want %d", end, budget, first, len(got), want)
			}
			if enc := encodeList(t, got); len(enc) > budget && len(got) > 0 {
				t.Fatalf("window of %d bytes exceeds budget %d", len(enc), budget)
			}
			if string(encodeList(t, got)) != string(encodeList(t, all[first:end])) {
				t.Fatalf("window content or order wrong at end=%d budget=%d", end, budget)
			}
		}
		last := len(encodeList(t, all[599:600]))
		for _, tc := range []struct{ end, budget int }{
			{0, 1000}, {600, 0}, {600, last - 1}, {600, last}, {600, last + 1},
			{600, 1 << 30}, {600, 5000}, {600, 50_000}, {600, 123_456}, {10, 1 << 20}, {1, 1 << 20},
			{300, 40_000},
		} {
			check(tc.end, tc.budget)
		}
		// Exact boundaries: a budget equal to the encoding of the last k entries returns exactly k.
		for _, k := range []int{1, 2, 17, 300} {
			exact := len(encodeList(t, all[600-k:]))
			check(600, exact)
			check(600, exact-1)
		}
		if _, _, err := s.Window(ctx, key, 601, 1<<20); !errors.Is(err, ErrNotFound) {
			t.Errorf("window over a missing position: %v", err)
		}
	})
}

func TestEscaping(t *testing.T) {
	hostile := []string{
		"../x", "a/b", "%2e%2e", "..", ".", "/", "../../etc/passwd", "a\\b", "日本語-タスク",
		"Task", "task", "TASK", "x~y", "%", "a b", "\x00\n", strings.Repeat("é", 400), strings.Repeat("é", 401),
		strings.Repeat("a", 1000), strings.Repeat("a", 1001),
	}
	seen := map[string]string{}
	for _, id := range hostile {
		e := blobkey.Segment(id)
		if e == "" || e == "." || e == ".." || strings.ContainsAny(e, "/\\.") || len(e) > blobkey.MaxSegment {
			t.Errorf("blobkey.Segment(%q) = %q is unsafe", id, e)
		}
		if strings.ToLower(e) != e {
			t.Errorf("blobkey.Segment(%q) = %q has upper case", id, e)
		}
		if prev, dup := seen[e]; dup {
			t.Errorf("%q and %q both escape to %q", prev, id, e)
		}
		seen[e] = id
	}
	if got := blobkey.Segment("task-1_a"); got != "task-1_a" {
		t.Errorf("plain ID changed: %q", got)
	}

	// On a real folder every hostile ID stays under the bucket root and reads back.
	ctx := context.Background()
	parent := t.TempDir()
	root := filepath.Join(parent, "bucket")
	s, err := Open(ctx, "file://"+filepath.ToSlash(root))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, id := range hostile {
		k := Key{TaskID: id, FirstRunID: id}
		if err := s.Write(ctx, k, 0, msgs(i, i+1, 0)); err != nil {
			t.Fatalf("write %q: %v", id, err)
		}
		if err := s.PutJSON(ctx, k, id, i); err != nil {
			t.Fatalf("stash %q: %v", id, err)
		}
	}
	cold := NewFromBucket(s.b)
	for i, id := range hostile {
		k := Key{TaskID: id, FirstRunID: id}
		got, err := cold.Read(ctx, k, 0, 1)
		if err != nil || encode(t, got) != encode(t, msgs(i, i+1, 0)) {
			t.Fatalf("read %q: %v %s", id, err, encode(t, got))
		}
		var n int
		if err := cold.GetJSON(ctx, k, id, &n); err != nil || n != i {
			t.Fatalf("stash %q: %v %d", id, err, n)
		}
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 1 {
		t.Errorf("files escaped the bucket root: %v", entries)
	}
	files := 0
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".attrs") || strings.HasSuffix(p, ".tmp") {
			t.Errorf("unexpected side file %s", p)
		}
		if !d.IsDir() {
			files++
		}
		return nil
	})
	if files != 2*len(hostile) {
		t.Errorf("%d files, want %d", files, 2*len(hostile))
	}

	for _, k := range []Key{{}, {TaskID: "t"}, {FirstRunID: "r"}} {
		if err := s.Write(ctx, k, 0, msgs(0, 1, 0)); err == nil {
			t.Errorf("key %+v accepted", k)
		}
	}
	if err := s.Write(ctx, key, -1, msgs(0, 1, 0)); err == nil {
		t.Error("negative position accepted")
	}
}

func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	backends(t, func(t *testing.T, open func() *Store) {
		shared := open()
		const tasks, turns, perTurn = 12, 10, 3
		var wg sync.WaitGroup
		errs := make(chan error, tasks*2)
		for w := range tasks {
			k := Key{TaskID: fmt.Sprintf("task/%d", w), FirstRunID: "run"}
			s := shared
			if w%2 == 0 {
				s = open() // another worker on the same bucket
			}
			wg.Go(func() {
				for turn := range turns {
					if err := s.Write(ctx, k, turn*perTurn, msgs(turn*perTurn, (turn+1)*perTurn, w)); err != nil {
						errs <- err
						return
					}
				}
			})
			// A retried attempt racing the first one on the same key.
			wg.Go(func() {
				if err := open().Write(ctx, k, 0, msgs(0, perTurn, w)); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		cold := open()
		for w := range tasks {
			k := Key{TaskID: fmt.Sprintf("task/%d", w), FirstRunID: "run"}
			got, err := cold.Read(ctx, k, 0, turns*perTurn)
			if err != nil {
				t.Fatal(err)
			}
			if encode(t, got) != encode(t, msgs(0, turns*perTurn, w)) {
				t.Fatalf("task %d transcript wrong", w)
			}
		}
	})
}

func TestStash(t *testing.T) {
	ctx := context.Background()
	backends(t, func(t *testing.T, open func() *Store) {
		type state struct {
			Turn  int               `json:"turn"`
			Notes map[string]string `json:"notes"`
		}
		s := open()
		if err := s.PutJSON(ctx, key, "can-state", state{3, map[string]string{"a": "b"}}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutJSON(ctx, key, "can-state", state{4, nil}); err != nil { // replaces
			t.Fatal(err)
		}
		var got state
		if err := open().GetJSON(ctx, key, "can-state", &got); err != nil || got.Turn != 4 || got.Notes != nil {
			t.Fatalf("GetJSON = %+v, %v", got, err)
		}
		if err := s.GetJSON(ctx, key, "nope", &got); !errors.Is(err, ErrNotFound) {
			t.Errorf("missing stash: %v", err)
		}
		if err := s.PutJSON(ctx, key, "", 1); err == nil {
			t.Error("empty stash name accepted")
		}
		if err := s.PutJSON(ctx, key, "bad", func() {}); err == nil {
			t.Error("unencodable value accepted")
		}
	})
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "a", "b")
	s, err := Open(ctx, "file://"+filepath.ToSlash(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, key, 0, msgs(0, 1, 0)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tasks")); err != nil {
		t.Fatalf("folder not created: %v", err)
	}
	m, err := Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if _, err := Open(ctx, ""); err == nil {
		t.Error("empty URL accepted")
	}
	if _, err := Open(ctx, "nosuch://bucket"); err == nil {
		t.Error("unknown scheme accepted")
	}
	// A bucket passed in stays open after Close.
	b := memblob.OpenBucket(nil)
	defer b.Close()
	if err := NewFromBucket(b).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Exists(ctx, "x"); err != nil {
		t.Errorf("NewFromBucket's Close closed the caller's bucket: %v", err)
	}
}

func TestLocalDefaults(t *testing.T) {
	for in, want := range map[string]string{
		"file:///data/t":               "file:///data/t?create_dir=1&metadata=skip&no_tmp_dir=1",
		"file:///data/t?metadata=":     "file:///data/t?create_dir=1&metadata=&no_tmp_dir=1",
		"s3://bucket?region=eu-west-1": "s3://bucket?region=eu-west-1",
		"mem://":                       "mem://",
	} {
		got, err := withLocalDefaults(in)
		if err != nil || got != want {
			t.Errorf("withLocalDefaults(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	got, err := withLocalDefaults("rel/dir")
	if err != nil || !strings.HasPrefix(got, "file:///") || !strings.Contains(got, "/rel/dir?") {
		t.Errorf("plain path: %q, %v", got, err)
	}
}

// The cache holds at most cacheBytes (weighed twice: encoded and decoded)
// and never an entry over cacheMaxEntry.
func TestLRUBounds(t *testing.T) {
	c := newLRU()
	big := make([]byte, cacheMaxEntry)
	for i := range 4 * cacheBytes / cacheMaxEntry {
		c.add(fmt.Sprint("big", i), big)
	}
	c.c.CleanUp() // eviction runs in maintenance; make it happen now
	if w := c.c.WeightedSize(); w > cacheBytes {
		t.Errorf("cache weighs %d bytes, more than %d", w, cacheBytes)
	}
	if n := c.c.EstimatedSize(); n == 0 || n >= 4*cacheBytes/cacheMaxEntry {
		t.Errorf("%d entries cached of %d added", n, 4*cacheBytes/cacheMaxEntry)
	}
	c.add("huge", make([]byte, cacheMaxEntry+1))
	if _, ok := c.get("huge"); ok {
		t.Error("oversized entry cached")
	}
}

// An entry added to a cache with room is served from it. (In a full cache
// W-TinyLFU may refuse a newcomer less frequent than its victim, so this is
// only checked with room to spare.)
func TestLRUCachesWhatFits(t *testing.T) {
	c := newLRU()
	c.add("small", []byte("v"))
	c.add("edge", make([]byte, cacheMaxEntry))
	c.c.CleanUp()
	if v, ok := c.get("small"); !ok || string(v) != "v" {
		t.Error("a small entry just added is not cached")
	}
	if v, ok := c.get("edge"); !ok || len(v) != cacheMaxEntry {
		t.Error("an entry of cacheMaxEntry bytes is not cached")
	}
}

// BenchmarkRead200 reads a page of 200 entries of about 1 KB from a local
// folder, cold (a new Store, so every entry comes from disk) and cached.
func BenchmarkRead200(b *testing.B) {
	ctx := context.Background()
	bucket, err := fileblob.OpenBucket(b.TempDir(), &fileblob.Options{NoTempDir: true, Metadata: fileblob.MetadataDontWrite})
	if err != nil {
		b.Fatal(err)
	}
	defer bucket.Close()
	entries := msgs(0, 200, 790)
	if n := len(encode(b, entries[0])); n < 1000 || n > 1100 {
		b.Fatalf("entry is %d bytes", n)
	}
	if err := NewFromBucket(bucket).Write(ctx, key, 0, entries); err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, store func() *Store) {
		b.SetBytes(200 * 1024)
		for b.Loop() {
			got, err := store().Read(ctx, key, 0, 200)
			if err != nil || len(got) != 200 {
				b.Fatal(err)
			}
		}
	}
	b.Run("cold", func(b *testing.B) { run(b, func() *Store { return NewFromBucket(bucket) }) })
	warm := NewFromBucket(bucket)
	b.Run("cached", func(b *testing.B) { run(b, func() *Store { return warm }) })
	b.Run("window-cold", func(b *testing.B) {
		for b.Loop() {
			_, got, err := NewFromBucket(bucket).Window(ctx, key, 200, 64<<10)
			if err != nil || len(got) == 0 {
				b.Fatal(err)
			}
		}
	})
}
