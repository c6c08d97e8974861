package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob/memblob"

	"github.com/agenttask/agenttask/contract"
)

// Runs of one task as a reset makes them: r1 ran turns, a reset at t0+10s
// replaced it by r2. A zombie is an attempt of r1 that started before the
// reset and writes after it.
var (
	t0     = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r1     = Writer{Run: "run-1", Started: t0}
	r1late = Writer{Run: "run-1", Started: t0.Add(5 * time.Second)} // another attempt of run 1
	zombie = Writer{Run: "run-1", Started: t0.Add(9 * time.Second)} // run 1's, started before the reset
	r2     = Writer{Run: "run-2", Started: t0.Add(11 * time.Second)}
	r3     = Writer{Run: "run-3", Started: t0.Add(20 * time.Second)} // r2's successor (continue-as-new)
)

func as(w Writer) context.Context { return WithWriter(context.Background(), w) }

func textMsg(typ, text string) contract.Message {
	return contract.Message{Type: typ, TaskIO: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(text)},
		CommittedAt: "2026-03-01T12:00:00.000000Z"}}
}

func requireTexts(t *testing.T, s *Store, ctx context.Context, want ...string) {
	t.Helper()
	got, err := s.Read(ctx, key, 0, len(want))
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range got {
		if contract.TextOf(m.TaskIO) != want[i] {
			t.Fatalf("position %d holds %q, want %q (all: %s)", i, contract.TextOf(m.TaskIO), want[i], encode(t, got))
		}
	}
}

func requireWriteErr(t *testing.T, err, want error, pos int) {
	t.Helper()
	var pe *PositionError
	if !errors.Is(err, want) || !errors.As(err, &pe) || pe.Position != pos {
		t.Fatalf("write at %d: %v, want %v", pos, err, want)
	}
}

// The run a reset made writes over the replaced run's entries; the
// replaced run's later entries stay until the new run reaches them.
func TestResetRunReplacesTheReplacedRunsEntries(t *testing.T) {
	backends(t, func(t *testing.T, open func() *Store) {
		s := open()
		turns := []contract.Message{textMsg("input", "q1"), textMsg("output", "a1"), textMsg("input", "q2"), textMsg("output", "a2")}
		if err := s.Write(as(r1), key, 0, turns); err != nil {
			t.Fatal(err)
		}
		// Position 1 again, stamped anew by the reset run, and a new input at 2.
		a1 := textMsg("output", "a1")
		a1.CommittedAt = "2026-03-01T12:00:11.000000Z"
		if err := s.Write(as(r2), key, 1, []contract.Message{a1, textMsg("input", "other")}); err != nil {
			t.Fatalf("the reset run's write: %v", err)
		}
		for _, reader := range []*Store{s, open()} {
			requireTexts(t, reader, as(r2), "q1", "a1", "other", "a2")
			got, _ := reader.Read(as(r2), key, 1, 2)
			if got[0].CommittedAt != a1.CommittedAt {
				t.Fatalf("position 1 is the replaced run's: %+v", got[0])
			}
		}
		// Same entries again from the reset run: nothing to do.
		if err := open().Write(as(r2), key, 1, []contract.Message{a1, textMsg("input", "other")}); err != nil {
			t.Fatal(err)
		}
	})
}

// The same run writing a different entry is refused, as every write was
// before runs were told apart, whichever attempt it is; so is a writer with
// no run.
func TestSameRunDifferentEntryIsAConflict(t *testing.T) {
	backends(t, func(t *testing.T, open func() *Store) {
		s := open()
		if err := s.Write(as(r1), key, 0, []contract.Message{textMsg("input", "q1")}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			s   *Store
			ctx context.Context
		}{{s, as(r1)}, {open(), as(r1late)}, {open(), context.Background()}} {
			requireWriteErr(t, c.s.Write(c.ctx, key, 0, []contract.Message{textMsg("input", "forked")}), ErrConflict, 0)
		}
		requireTexts(t, open(), context.Background(), "q1")
	})
}

// An attempt of the replaced run that writes after the reset (a zombie)
// never takes a position from the run that replaced it: where the new run
// wrote, it is refused; where it writes first, the new run's entry
// replaces it when the new run gets there.
func TestZombieOfTheReplacedRunIsRefused(t *testing.T) {
	backends(t, func(t *testing.T, open func() *Store) {
		s := open()
		if err := s.Write(as(r1), key, 0, []contract.Message{textMsg("input", "q1"), textMsg("output", "a1")}); err != nil {
			t.Fatal(err)
		}
		if err := open().Write(as(r2), key, 1, []contract.Message{textMsg("output", "new a1")}); err != nil {
			t.Fatal(err)
		}
		// Late: its own entry again, which the store it ran on still caches,
		// is nothing to write; a different one is refused.
		if err := s.Write(as(zombie), key, 1, []contract.Message{textMsg("output", "a1")}); err != nil {
			t.Fatal(err)
		}
		requireWriteErr(t, s.Write(as(zombie), key, 1, []contract.Message{textMsg("output", "zombie")}), ErrSuperseded, 1)
		requireWriteErr(t, open().Write(as(zombie), key, 1, []contract.Message{textMsg("output", "a1")}), ErrSuperseded, 1)
		requireTexts(t, open(), as(r2), "q1", "new a1")

		// Ahead of the new run: taken for now, then given way.
		if err := s.Write(as(zombie), key, 2, []contract.Message{textMsg("input", "zombie q2")}); err != nil {
			t.Fatal(err)
		}
		if err := open().Write(as(r2), key, 2, []contract.Message{textMsg("input", "q2")}); err != nil {
			t.Fatalf("the new run after a zombie: %v", err)
		}
		requireWriteErr(t, open().Write(as(zombie), key, 2, []contract.Message{textMsg("input", "zombie q2")}), ErrSuperseded, 2)
		requireTexts(t, open(), as(r2), "q1", "new a1", "q2")

		// The new run's successor (continue-as-new) writes on, and rewrites
		// what its predecessor wrote as it was.
		if err := open().Write(as(r3), key, 2, []contract.Message{textMsg("input", "q2"), textMsg("output", "a2")}); err != nil {
			t.Fatal(err)
		}
		requireTexts(t, open(), as(r3), "q1", "new a1", "q2", "a2")
	})
}

// Entries written before writers were recorded (or outside any run) read
// as before and give way to a run's different entry.
func TestEntriesWithoutAWriterGiveWay(t *testing.T) {
	backends(t, func(t *testing.T, open func() *Store) {
		if err := open().Write(context.Background(), key, 0, []contract.Message{textMsg("input", "q1"), textMsg("output", "a1")}); err != nil {
			t.Fatal(err)
		}
		requireTexts(t, open(), as(r2), "q1", "a1")
		if err := open().Write(as(r2), key, 1, []contract.Message{textMsg("output", "other")}); err != nil {
			t.Fatalf("a run's entry over one without a writer: %v", err)
		}
		requireTexts(t, open(), context.Background(), "q1", "other")
	})
}

// A worker that cached the replaced run's entries does not show them to
// the new run, which another worker wrote them over.
func TestCachedEntriesOfAReplacedRunAreNotServedToTheNewRun(t *testing.T) {
	b := memblob.OpenBucket(nil)
	defer b.Close()
	w1, w2 := NewFromBucket(b), NewFromBucket(b) // two workers
	entries := []contract.Message{textMsg("input", "q1"), textMsg("output", "a1"), textMsg("input", "q2")}
	if err := w1.Write(as(r1), key, 0, entries); err != nil {
		t.Fatal(err)
	}
	requireTexts(t, w1, as(r1), "q1", "a1", "q2") // cached on w1
	if err := w2.Write(as(r2), key, 2, []contract.Message{textMsg("input", "reset q2")}); err != nil {
		t.Fatal(err)
	}
	requireTexts(t, w1, as(r2), "q1", "a1", "reset q2")
	if _, got, err := w1.Window(as(r2), key, 3, 1<<20); err != nil || contract.TextOf(got[2].TaskIO) != "reset q2" {
		t.Fatalf("window on the caching worker: %v %s", err, encode(t, got))
	}
	// Run 1's own entries serve run 1 from the cache; run 2 read them once.
	if it, ok := w1.cache.item("tasks/task-1/0f8e2a9c-1111-2222-3333-444455556666/entries/0000000000.json", r2.Run); !ok || it.writer != r1 {
		t.Fatalf("entry 0 not cached for run 2 after its read: %v %+v", ok, it)
	}
}

// Stamped entries stay flat TaskIO objects that any decoder (an earlier
// version's too) reads as the entry; a window counts them without the stamp.
func TestStampedEntriesReadAsBefore(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	entries := msgs(0, 6, 30)
	if err := NewFromBucket(b).Write(as(r1), key, 0, entries); err != nil {
		t.Fatal(err)
	}
	for i, want := range entries {
		k, _ := key.entryKey(i)
		raw, err := b.ReadAll(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(raw, []byte(`"message":[{"transcriptWriter":{"run":"run-1","started":"2026-03-01T12:00:00Z"},"mimeType"`)) {
			t.Fatalf("entry %d carries no writer in its first part: %s", i, raw)
		}
		var plain contract.Message // what a decoder that knows nothing of writers reads
		if err := json.Unmarshal(raw, &plain); err != nil || encode(t, plain) != encode(t, want) {
			t.Fatalf("entry %d decodes as %s (%v), want %s", i, encode(t, plain), err, encode(t, want))
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil || obj["transcriptWriter"] != nil || obj["n"] == nil {
			t.Fatalf("entry %d is not the flat object with the writer inside: %s", i, raw)
		}
	}
	budget := len(encode(t, entries[2:]))
	first, got, err := NewFromBucket(b).Window(as(r1), key, 6, budget)
	if err != nil || first != 2 || encode(t, got) != encode(t, entries[2:]) {
		t.Fatalf("window of %d bytes: first %d, %v, %s", budget, first, err, encode(t, got))
	}
}

// A value of a run (PerRun): the run's retries adopt the first, the run a
// reset made replaces it, a zombie adopts the new run's; a reader under
// PerRun finds only its own run's. Values named by their content (without
// PerRun) keep the first value and are stored as plain JSON.
func TestPerRunValues(t *testing.T) {
	backends(t, func(t *testing.T, open func() *Store) {
		out := func(s string) contract.Message { return textMsg("output", s) }
		put := func(w Writer, v contract.Message) (contract.Message, bool) {
			t.Helper()
			var stored contract.Message
			adopted, err := open().PutOnce(PerRun(as(w)), key, "pending-1", v, &stored)
			if err != nil {
				t.Fatal(err)
			}
			if !adopted {
				return v, false
			}
			return stored, true
		}
		if got, adopted := put(r1, out("first")); adopted || contract.TextOf(got.TaskIO) != "first" {
			t.Fatalf("first put: %v %+v", adopted, got)
		}
		if got, adopted := put(r1late, out("retry")); !adopted || contract.TextOf(got.TaskIO) != "first" {
			t.Fatalf("a retry of the run adopts its first value: %v %+v", adopted, got)
		}
		if got, adopted := put(r2, out("reset")); adopted || contract.TextOf(got.TaskIO) != "reset" {
			t.Fatalf("the reset run replaces the replaced run's value: %v %+v", adopted, got)
		}
		if got, adopted := put(zombie, out("zombie")); !adopted || contract.TextOf(got.TaskIO) != "reset" {
			t.Fatalf("a zombie adopts the new run's value: %v %+v", adopted, got)
		}
		var m contract.Message
		if err := open().GetOnce(PerRun(as(r1)), key, "pending-1", &m); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the replaced run finds the new run's value: %v %+v", err, m)
		}
		if err := open().GetOnce(PerRun(as(r2)), key, "pending-1", &m); err != nil || contract.TextOf(m.TaskIO) != "reset" {
			t.Fatalf("the new run's own value: %v %+v", err, m)
		}
		if err := open().GetOnce(as(r3), key, "pending-1", &m); err != nil || contract.TextOf(m.TaskIO) != "reset" {
			t.Fatalf("a successor reads it: %v %+v", err, m)
		}

		// A JSON string (a stash part) records no writer: another run's differs and gives way.
		var s string
		if _, err := open().PutOnce(PerRun(as(r1)), key, "carry-2.1.0", "run 1's state", &s); err != nil {
			t.Fatal(err)
		}
		if adopted, err := open().PutOnce(PerRun(as(r2)), key, "carry-2.1.0", "run 2's state", &s); err != nil || adopted {
			t.Fatalf("the reset run's part: %v %v", adopted, err)
		}
		if err := open().GetOnce(as(r3), key, "carry-2.1.0", &s); err != nil || s != "run 2's state" {
			t.Fatalf("part read by the next run: %q %v", s, err)
		}

		// Values by content: first wins, stored plain whoever writes.
		v := map[string]any{"a": 1}
		var got map[string]any
		if _, err := open().PutOnce(as(r1), key, "value-x", v, &got); err != nil {
			t.Fatal(err)
		}
		if adopted, err := open().PutOnce(as(r2), key, "value-x", map[string]any{"a": 2}, &got); err != nil || !adopted || got["a"] != 1.0 {
			t.Fatalf("a value by content adopts the first: %v %v %v", adopted, err, got)
		}
	})
}

// Values stored without PerRun are the plain JSON a service reads directly.
func TestValuesStayPlainJSON(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	var stored json.RawMessage
	if _, err := NewFromBucket(b).PutOnce(as(r1), key, "value-x", json.RawMessage(`{"a":[1,2]}`), &stored); err != nil {
		t.Fatal(err)
	}
	k, _ := key.stashKey("value-x")
	raw, err := b.ReadAll(ctx, k)
	if err != nil || string(raw) != `{"a":[1,2]}` {
		t.Fatalf("stored %s, %v", raw, err)
	}
}

func TestStampAndUnstamp(t *testing.T) {
	for _, c := range []struct {
		name    string
		v       any
		stamped string // "" when it records no writer
	}{
		{"message", textMsg("input", "hi"), `{"type":"input","message":[{"transcriptWriter":{"run":"run-1","started":"2026-03-01T12:00:00Z"},"mimeType":"text/plain","text":"hi","sizeBytes":2}],"committed_at":"2026-03-01T12:00:00.000000Z"}`},
		{"message without type", contract.Message{TaskIO: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("x")}}},
			`{"message":[{"transcriptWriter":{"run":"run-1","started":"2026-03-01T12:00:00Z"},"mimeType":"text/plain","text":"x","sizeBytes":1}]}`},
		{"message without parts", contract.Message{Type: "output"}, ""},
		{"object", map[string]int{"b": 1}, `{"transcriptWriter":{"run":"run-1","started":"2026-03-01T12:00:00Z"},"b":1}`},
		{"empty object", struct{}{}, `{"transcriptWriter":{"run":"run-1","started":"2026-03-01T12:00:00Z"}}`},
		{"string", "part", ""},
		{"list", []int{1}, ""},
	} {
		content, _ := json.Marshal(c.v)
		got := stamp(content, c.v, r1)
		want := c.stamped
		if want == "" {
			want = string(content)
		}
		if string(got) != want {
			t.Errorf("%s: stamped %s, want %s", c.name, got, want)
		}
		back, w := unstamp(got)
		if string(back) != string(content) || (c.stamped != "") != (w == r1) {
			t.Errorf("%s: unstamped %s %+v, want %s", c.name, back, w, content)
		}
		if plain := stamp(content, c.v, Writer{}); string(plain) != string(content) {
			t.Errorf("%s: stamped without a writer: %s", c.name, plain)
		}
	}
	// Look-alikes that the store did not stamp are read as they are.
	for _, raw := range []string{
		`{"type":"input","message":[{"mimeType":"text/plain","text":"x"}],"v":{"message":[{"transcriptWriter":{"run":"r","started":"2026-03-01T12:00:00Z"},"a":1}]}}`,
		`{"type":"in\"put","message":[{"transcriptWriter":{"run":"r","started":"2026-03-01T12:00:00Z"},"a":1}]}`,
		`{"transcriptWriter":"not a writer","a":1}`,
		`{"transcriptWriter":{"run":"","started":"2026-03-01T12:00:00Z"},"a":1}`,
		`"text"`, ``,
	} {
		if back, w := unstamp([]byte(raw)); string(back) != raw || w != (Writer{}) {
			t.Errorf("unstamp(%s) = %s, %+v", raw, back, w)
		}
	}
}

func TestDecide(t *testing.T) {
	for _, c := range []struct {
		stored, w Writer
		want      verdict
	}{
		{Writer{}, Writer{}, conflict},
		{r1, Writer{}, conflict},
		{Writer{}, r1, replace},
		{r1, r1late, conflict},
		{r1late, r1, conflict},
		{r1, r2, replace},
		{r2, zombie, superseded},
		{r2, Writer{Run: "run-x", Started: r2.Started}, superseded}, // a tie is never taken over
	} {
		if got := decide(c.stored, c.w); got != c.want {
			t.Errorf("decide(%+v, %+v) = %d, want %d", c.stored, c.w, got, c.want)
		}
	}
	if !strings.Contains(ErrSuperseded.Error(), "replaced") {
		t.Error(ErrSuperseded)
	}
}
