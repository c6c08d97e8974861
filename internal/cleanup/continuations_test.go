package cleanup

import (
	"context"
	"testing"

	"gocloud.dev/blob/memblob"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/transcript"
)

// chainOf writes base <- mid <- tip: mid resumes base (reading its 2
// entries), tip resumes mid (reading its 3); each has one entry of its own.
func chainOf(t *testing.T, ctx context.Context, s *transcript.Store) (base, mid, tip transcript.Key) {
	t.Helper()
	msg := func(text string) []contract.Message {
		return []contract.Message{{Type: "input", TaskIO: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(text)}, CommittedAt: "2026-01-01T00:00:00.000000Z"}}}
	}
	base = transcript.Key{TaskID: "base", FirstRunID: "b0"}
	mid = transcript.Key{TaskID: "mid", FirstRunID: "m0", From: 2, Parent: &transcript.Link{TaskID: "base", FirstRunID: "b0"}}
	tip = transcript.Key{TaskID: "tip", FirstRunID: "t0", From: 3, Parent: &transcript.Link{TaskID: "mid", FirstRunID: "m0", From: 2}}
	for i, text := range []string{"b-1", "b-2"} {
		if err := s.Write(ctx, base, i, msg(text)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []transcript.Key{mid, tip} {
		if err := s.WriteLink(ctx, k); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, k, k.From, msg(k.TaskID)); err != nil {
			t.Fatal(err)
		}
	}
	return base, mid, tip
}

func readAll(t *testing.T, ctx context.Context, s *transcript.Store, k transcript.Key, n int) []string {
	t.Helper()
	got, err := s.Read(ctx, k, 0, n)
	if err != nil {
		t.Fatalf("reading %s: %v", k, err)
	}
	var out []string
	for _, m := range got {
		out = append(out, *m.Message[0].Text)
	}
	return out
}

// Deleting tasks of a chain of continuations keeps what the live ones
// read and reports it; deleting the last one releases the rest, up the
// chain, until nothing is left.
func TestPurgeKeepsForLiveContinuationsAndReleasesAfter(t *testing.T) {
	ctx := context.Background()
	s := transcript.NewFromBucket(memblob.OpenBucket(nil))
	st := Storage{Transcript: s}
	_, _, tip := chainOf(t, ctx, s)

	// The base goes first: mid reads its two entries.
	r, err := st.Purge(ctx, "base")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kept) != 1 || r.Kept[0].TaskID != "base" || r.Kept[0].FirstRunID != "b0" || r.Kept[0].Entries != 2 || r.Kept[0].Below != 2 ||
		len(r.Kept[0].For) != 1 || r.Kept[0].For[0].TaskID != "mid" || r.Kept[0].For[0].From != 2 {
		t.Fatalf("purging base: %+v", r)
	}
	if r.TranscriptObjects != 0 {
		t.Fatalf("base had nothing of its own to remove: %+v", r)
	}
	// Then mid, which tip reads (its own entry and, through its link, base's).
	r, err = st.Purge(ctx, "mid")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kept) != 1 || r.Kept[0].TaskID != "mid" || r.Kept[0].Entries != 1 || r.Kept[0].For[0].TaskID != "tip" {
		t.Fatalf("purging mid: %+v", r)
	}
	if got := readAll(t, ctx, s, tip, 4); len(got) != 4 || got[0] != "b-1" || got[2] != "mid" || got[3] != "tip" {
		t.Fatalf("tip reads %v", got)
	}
	// A repeated purge keeps the same and removes nothing.
	if again, err := st.Purge(ctx, "mid"); err != nil || again.Total() != 0 || len(again.Kept) != 1 {
		t.Fatalf("again: %+v %v", again, err)
	}
	// Deleted tasks read as deleted from the store.
	for _, id := range []string{"base", "mid"} {
		fs, err := s.Describe(ctx, id)
		if err != nil || len(fs) != 1 || !fs[0].Stashed(transcript.KeptName) {
			t.Fatalf("%s: %+v %v", id, fs, err)
		}
	}

	// tip goes: mid's remainder, then base's, go with it.
	r, err = st.Purge(ctx, "tip")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kept) != 0 {
		t.Fatalf("purging tip kept %+v", r.Kept)
	}
	// tip: entry, link; mid: entry, link, record of tip, marker; base: 2
	// entries, record of mid, marker.
	if r.TranscriptObjects != 2+4+4 {
		t.Fatalf("purging tip removed %d objects, want 10", r.TranscriptObjects)
	}
	for _, id := range []string{"base", "mid", "tip"} {
		if fs, err := s.Describe(ctx, id); err != nil || len(fs) != 0 {
			t.Fatalf("%s left: %+v %v", id, fs, err)
		}
	}
}

// Purging a continuation of a task that is not deleted forgets its record
// there and leaves that task whole.
func TestPurgingAContinuationForgetsItsRecord(t *testing.T) {
	ctx := context.Background()
	s := transcript.NewFromBucket(memblob.OpenBucket(nil))
	st := Storage{Transcript: s}
	base, _, _ := chainOf(t, ctx, s)
	if _, err := st.Purge(ctx, "tip"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Purge(ctx, "mid"); err != nil {
		t.Fatal(err)
	}
	if cs, _, err := s.Continuations(ctx, base); err != nil || len(cs) != 0 {
		t.Fatalf("base's records: %+v %v", cs, err)
	}
	if got := readAll(t, ctx, s, base, 2); len(got) != 2 {
		t.Fatalf("base reads %v", got)
	}
	if fs, _ := s.Describe(ctx, "base"); len(fs) != 1 || fs[0].Stashed(transcript.KeptName) {
		t.Fatalf("base: %+v", fs)
	}
}

// Add merges what two purges kept: the later one's word for a transcript
// both kept, the others' added, counts summed.
func TestPurgeResultAddMergesKept(t *testing.T) {
	a := PurgeResult{TranscriptObjects: 1, Kept: []KeptTranscript{{TaskID: "a", FirstRunID: "r", Entries: 2}, {TaskID: "b", FirstRunID: "r", Entries: 1}}}
	b := PurgeResult{TranscriptObjects: 2, Files: 1, Kept: []KeptTranscript{{TaskID: "a", FirstRunID: "r", Entries: 3}, {TaskID: "c", FirstRunID: "r"}}}
	got := a.Add(b)
	if got.TranscriptObjects != 3 || got.Files != 1 || len(got.Kept) != 3 || got.Kept[0].Entries != 3 || got.Kept[1].TaskID != "b" || got.Kept[2].TaskID != "c" {
		t.Fatalf("%+v", got)
	}
}
