package transcript

import (
	"context"
	"errors"
	"testing"
	"time"

	"gocloud.dev/blob/memblob"
)

// A continuation's link records it in the transcript it continues; it is
// live while its own link exists. A continuation whose start recorded
// nothing (an earlier release) is recorded at its next write, unless the
// transcript it continues is gone.
func TestContinuationsAreRecordedAndLive(t *testing.T) {
	ctx := context.Background()
	s := NewFromBucket(memblob.OpenBucket(nil))
	orig := Key{TaskID: "orig", FirstRunID: "r0"}
	if err := s.Write(ctx, orig, 0, msgs(0, 3, 1)); err != nil {
		t.Fatal(err)
	}
	cont := Key{TaskID: "cont", FirstRunID: "r1", From: 2, Parent: &Link{TaskID: "orig", FirstRunID: "r0"}}
	if err := s.WriteLink(ctx, cont); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteLink(ctx, cont); err != nil {
		t.Fatalf("the same link again: %v", err)
	}
	live, more, err := s.LiveContinuations(ctx, orig)
	if err != nil || more || len(live) != 1 || live[0].TaskID != "cont" || live[0].FirstRunID != "r1" || live[0].From != 2 || live[0].RecordedAt == "" {
		t.Fatalf("live continuations of orig: %+v %v %v", live, more, err)
	}
	// The record does not date orig: it is bookkeeping.
	fs, err := s.Describe(ctx, "orig")
	if err != nil || len(fs) != 1 {
		t.Fatal(fs, err)
	}
	newestEntry := fs[0].Newest
	time.Sleep(20 * time.Millisecond)
	other := Key{TaskID: "other", FirstRunID: "r2", From: 3, Parent: &Link{TaskID: "orig", FirstRunID: "r0"}}
	if err := s.RecordContinuation(ctx, other); err != nil {
		t.Fatal(err)
	}
	if fs, _ := s.Describe(ctx, "orig"); !fs[0].Newest.Equal(newestEntry) || fs[0].Objects != 5 {
		t.Fatalf("orig after a record: %+v (newest entry %v)", fs[0], newestEntry)
	}
	// other never wrote its link: not live.
	live, _, err = s.LiveContinuations(ctx, orig)
	if err != nil || len(live) != 1 || live[0].TaskID != "cont" {
		t.Fatalf("live: %+v %v", live, err)
	}

	// An earlier release's continuation: link, no record; its next write
	// records it.
	old := Key{TaskID: "old", FirstRunID: "r3", From: 3, Parent: &Link{TaskID: "orig", FirstRunID: "r0"}}
	if err := s.writeLink(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, old, 3, msgs(3, 4, 1)); err != nil {
		t.Fatal(err)
	}
	live, _, _ = s.LiveContinuations(ctx, orig)
	if len(live) != 2 || live[1].TaskID != "old" || live[1].From != 3 {
		t.Fatalf("after the earlier release's continuation wrote: %+v", live)
	}
	// One whose parent is gone records nothing (no folder is made again).
	gone := Key{TaskID: "late", FirstRunID: "r4", From: 1, Parent: &Link{TaskID: "gone", FirstRunID: "r9"}}
	if err := s.Write(ctx, gone, 1, msgs(1, 2, 1)); err != nil {
		t.Fatal(err)
	}
	if fs, err := s.Describe(ctx, "gone"); err != nil || len(fs) != 0 {
		t.Fatalf("a record was written for a transcript that is gone: %+v %v", fs, err)
	}

	// Forgotten, a record is no longer listed.
	if there, err := s.ForgetContinuation(ctx, orig, Continuation{TaskID: "other", FirstRunID: "r2"}); err != nil || !there {
		t.Fatal(there, err)
	}
	if there, err := s.ForgetContinuation(ctx, orig, Continuation{TaskID: "other", FirstRunID: "r2"}); err != nil || there {
		t.Fatalf("forgetting again: %v %v", there, err)
	}
	all, _, _ := s.Continuations(ctx, orig)
	if len(all) != 2 {
		t.Fatalf("records after forgetting one: %+v", all)
	}
}

// A purge under a plan keeps what the live continuations read (entries
// below the largest From, the link, the records, the Kept marker) and
// removes the rest; the plan leaves out a later chain of the same task ID.
func TestPurgeKeepsWhatLiveContinuationsRead(t *testing.T) {
	ctx := context.Background()
	s := NewFromBucket(memblob.OpenBucket(nil))
	// orig/r0 continues base/b0 from 1; its entries 1..4; a stash.
	orig := Key{TaskID: "orig", FirstRunID: "r0", From: 1, Parent: &Link{TaskID: "base", FirstRunID: "b0"}}
	if err := s.Write(ctx, Key{TaskID: "base", FirstRunID: "b0"}, 0, msgs(0, 1, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteLink(ctx, orig); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, orig, 1, msgs(1, 5, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutJSON(ctx, orig, "state", map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	// Two continuations, from 3 and from 4; a later chain of orig's own ID.
	for _, c := range []Key{
		{TaskID: "c1", FirstRunID: "x1", From: 3, Parent: &Link{TaskID: "orig", FirstRunID: "r0", From: 1}},
		{TaskID: "c2", FirstRunID: "x2", From: 4, Parent: &Link{TaskID: "orig", FirstRunID: "r0", From: 1}},
		{TaskID: "orig", FirstRunID: "r5", From: 5, Parent: &Link{TaskID: "orig", FirstRunID: "r0", From: 1}},
	} {
		if err := s.WriteLink(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	plan, err := s.PlanKeep(ctx, "orig")
	if err != nil {
		t.Fatal(err)
	}
	k, ok := plan["r0"]
	if len(plan) != 1 || !ok || k.Below != 4 || len(k.For) != 2 || k.For[0].TaskID != "c1" || k.For[1].TaskID != "c2" {
		t.Fatalf("plan %+v", plan)
	}
	if err := s.MarkKept(ctx, "orig", plan); err != nil {
		t.Fatal(err)
	}
	kept := map[string]int{}
	removed := 0
	var token []byte
	for pages := 0; ; pages++ {
		n, next, err := s.PurgePage(ctx, "orig", plan, token, 2, kept)
		if err != nil {
			t.Fatal(err)
		}
		removed += n
		if next == nil {
			break
		}
		token = next
		if pages > 20 {
			t.Fatal("the purge never ends")
		}
	}
	// Removed: entry 4, the stash, r5's link; kept: entries 1-3, the link,
	// three records, the marker.
	if removed != 3 || kept["r0"] != 3 {
		t.Fatalf("removed %d, kept %v", removed, kept)
	}
	// c1 and c2 read everything below their own entries.
	for _, c := range []Key{
		{TaskID: "c1", FirstRunID: "x1", From: 3, Parent: &Link{TaskID: "orig", FirstRunID: "r0", From: 1}},
		{TaskID: "c2", FirstRunID: "x2", From: 4, Parent: &Link{TaskID: "orig", FirstRunID: "r0", From: 1}},
	} {
		got, err := s.Read(ctx, c, 0, c.From)
		if err != nil || encode(t, got) != encode(t, msgs(0, c.From, 1)) {
			t.Fatalf("%s reads %s, %v", c, encode(t, got), err)
		}
	}
	if _, err := s.Read(ctx, orig, 4, 5); !errors.Is(err, ErrNotFound) {
		t.Fatalf("entry 4, which no continuation reads: %v", err)
	}
	var mark Kept
	if err := s.GetJSON(ctx, orig, KeptName, &mark); err != nil || mark.Below != 4 || mark.DeletedAt == "" {
		t.Fatalf("the kept marker: %+v %v", mark, err)
	}
	fs, err := s.Describe(ctx, "orig")
	if err != nil || len(fs) != 1 || !fs[0].Stashed(KeptName) || fs[0].Stashed("state") {
		t.Fatalf("orig after the purge: %+v %v", fs, err)
	}

	// Once no continuation is live, the plan keeps nothing; PurgeRun
	// removes a kept folder whole.
	for _, c := range []Key{{TaskID: "c1", FirstRunID: "x1"}, {TaskID: "c2", FirstRunID: "x2"}} {
		if _, _, err := s.DeleteTaskPage(ctx, c.TaskID, 100); err != nil {
			t.Fatal(err)
		}
	}
	if plan, err := s.PlanKeep(ctx, "orig"); err != nil || len(plan) != 0 {
		t.Fatalf("plan with no live continuation: %+v %v", plan, err)
	}
	if n, more, err := s.PurgeRun(ctx, Key{TaskID: "orig", FirstRunID: "r0"}, 100); err != nil || more || n != 8 {
		t.Fatalf("PurgeRun: %d %v %v", n, more, err)
	}
	if fs, _ := s.Describe(ctx, "orig"); len(fs) != 0 {
		t.Fatalf("left: %+v", fs)
	}
}

// The store's state objects (the sweep's cursor) live beside tasks/, never
// listed as a task.
func TestStateObjects(t *testing.T) {
	ctx := context.Background()
	s := NewFromBucket(memblob.OpenBucket(nil))
	var v map[string]string
	if err := s.GetState(ctx, "cursor", &v); !errors.Is(err, ErrNotFound) {
		t.Fatalf("none yet: %v", err)
	}
	if err := s.PutState(ctx, "cursor", map[string]string{"a": "b"}); err != nil {
		t.Fatal(err)
	}
	if err := s.GetState(ctx, "cursor", &v); err != nil || v["a"] != "b" {
		t.Fatalf("%v %v", v, err)
	}
	if segs, _, err := s.ListTasks(ctx, nil, 10); err != nil || len(segs) != 0 {
		t.Fatalf("tasks: %v %v", segs, err)
	}
	if err := s.DeleteState(ctx, "cursor"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteState(ctx, "cursor"); err != nil {
		t.Fatalf("deleting none: %v", err)
	}
	if err := s.GetState(ctx, "cursor", &v); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after the delete: %v", err)
	}
	if err := s.PutState(ctx, "a/b", 1); err == nil {
		t.Fatal("a name with a slash was accepted")
	}
}
