package transcript

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agenttask/agenttask/internal/blobkey"
)

// ListTasks pages through the task folders; Describe finds each chain's
// folder, its entries, its link and its newest object.
func TestListTasksAndDescribe(t *testing.T) {
	backends(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		long := "Task-" + strings.Repeat("X", 200) // escaped past MaxSegment: hashed
		keys := []Key{
			{TaskID: "a", FirstRunID: "ra"},
			{TaskID: "a", FirstRunID: "rb"}, // the ID reused by a later chain
			{TaskID: "B/c", FirstRunID: "rc"},
			{TaskID: long, FirstRunID: "rd"},
		}
		for i, k := range keys {
			if err := s.Write(ctx, k, 0, msgs(0, i+1, 1)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond) // ModTimes in order (fileblob keeps ms)
		}
		cont := Key{TaskID: "e", FirstRunID: "re", From: 2, Parent: &Link{TaskID: "a", FirstRunID: "rb"}}
		if err := s.Write(ctx, cont, 2, msgs(2, 4, 1)); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteLink(ctx, cont); err != nil {
			t.Fatal(err)
		}
		if err := s.PutJSON(ctx, cont, "X y", map[string]int{"a": 1}); err != nil {
			t.Fatal(err)
		}

		var all []string
		var token []byte
		for pages := 0; ; pages++ {
			segs, next, err := s.ListTasks(ctx, token, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(segs) > 2 {
				t.Fatalf("a page of 2 held %v", segs)
			}
			all = append(all, segs...)
			if next == nil {
				break
			}
			if pages > 10 {
				t.Fatal("paging never ends")
			}
			token = next
		}
		want := map[string]bool{"a": true, blobkey.Segment("B/c"): true, blobkey.Segment(long): true, "e": true}
		if len(all) != len(want) {
			t.Fatalf("listed %v, want %v", all, want)
		}
		for _, seg := range all {
			if !want[seg] {
				t.Fatalf("listed %q, not a task folder (all %v)", seg, all)
			}
		}
		if _, _, err := s.ListTasks(ctx, nil, 0); err == nil {
			t.Fatal("a page size of 0 was accepted")
		}

		fs, err := s.Describe(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != 2 || fs[0].FirstRunID() != "rb" || fs[1].FirstRunID() != "ra" {
			t.Fatalf("task a's folders %+v: want rb (newest) then ra", fs)
		}
		// Its two entries and the record of its continuation e.
		if len(fs[0].Entries) != 2 || fs[0].Objects != 3 || fs[0].Linked || fs[0].Newest.IsZero() {
			t.Fatalf("folder rb %+v", fs[0])
		}
		if cs, more, err := s.Continuations(ctx, Key{TaskID: "a", FirstRunID: "rb"}); err != nil || more || len(cs) != 1 ||
			cs[0].TaskID != "e" || cs[0].FirstRunID != "re" || cs[0].From != 2 {
			t.Fatalf("rb's continuations: %+v %v %v", cs, more, err)
		}
		if !fs[0].Newest.After(fs[1].Newest) {
			t.Fatalf("rb's newest %v is not after ra's %v", fs[0].Newest, fs[1].Newest)
		}
		fe, err := s.Describe(ctx, "e")
		if err != nil {
			t.Fatal(err)
		}
		if len(fe) != 1 || !fe[0].Linked || fe[0].Objects != 4 || len(fe[0].Entries) != 2 || fe[0].Entries[0] != 2 {
			t.Fatalf("continuation e: %+v", fe)
		}
		if !fe[0].Stashed("X y") || fe[0].Stashed("x") {
			t.Fatalf("continuation e's stash: %v", fe[0].Stash)
		}
		k := KeyOf("e", fe[0], 0)
		if k.From != 2 {
			t.Fatalf("KeyOf the continuation: %+v", k)
		}
		got, err := s.Read(ctx, k, 0, 4)
		if err != nil {
			t.Fatal(err)
		}
		if encode(t, got) != encode(t, append(msgs(0, 2, 1), msgs(2, 4, 1)...)) {
			t.Fatalf("the continuation reads %s", encode(t, got))
		}
		if l, ok, err := s.ReadLink(ctx, k); err != nil || !ok || l.TaskID != "a" {
			t.Fatalf("ReadLink: %+v %v %v", l, ok, err)
		}
		if _, ok, err := s.ReadLink(ctx, keys[0]); err != nil || ok {
			t.Fatalf("ReadLink of a transcript with no link: %v %v", ok, err)
		}
		none, err := s.Describe(ctx, "nobody")
		if err != nil || len(none) != 0 {
			t.Fatalf("an absent task: %+v %v", none, err)
		}
		if _, err := s.Describe(ctx, "a/b"); err == nil {
			t.Fatal("a segment with a slash was accepted")
		}
	})
}

func TestSegmentPrefix(t *testing.T) {
	long := "Task-" + strings.Repeat("X", 200)
	if p := SegmentPrefix(blobkey.Segment(long)); p == "" || !strings.HasPrefix(long, p) {
		t.Fatalf("SegmentPrefix %q is not a prefix of the ID", p)
	}
	if p := SegmentPrefix("run-abc"); p != "" {
		t.Fatalf("SegmentPrefix of a whole segment: %q", p)
	}
}

// A mount may share the transcript's bucket: a task's files then sit in
// tasks/<task>/files/, which Describe must not take for a transcript (the
// newest folder would be "files", with no entries, and messages read after
// Temporal's retention would come back empty).
func TestDescribeSkipsAMountSpaceInTheSameBucket(t *testing.T) {
	backends(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		k := Key{TaskID: "a", FirstRunID: "ra"}
		if err := s.Write(ctx, k, 0, msgs(0, 2, 1)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		if err := s.b.WriteAll(ctx, "tasks/a/files/report.pdf", []byte("%PDF"), nil); err != nil {
			t.Fatal(err)
		}
		folders, err := s.Describe(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if len(folders) != 1 || folders[0].FirstRunID() != "ra" {
			t.Fatalf("folders of a: %+v, want only the transcript ra", folders)
		}
	})
}
