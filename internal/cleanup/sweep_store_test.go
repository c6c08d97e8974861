package cleanup

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"gocloud.dev/blob/memblob"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/faultblob"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/transcript"
)

// storeOf writes one transcript (one entry) for each of n tasks
// "<prefix>-00"..., each of first run "first-<id>".
func storeOf(t *testing.T, ctx context.Context, s *transcript.Store, prefix string, n int) []string {
	t.Helper()
	msg := []contract.Message{{Type: "input", TaskIO: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("x")}, CommittedAt: "2026-01-01T00:00:00.000000Z"}}}
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%02d", prefix, i)
		if err := s.Write(ctx, transcript.Key{TaskID: id, FirstRunID: "first-" + id}, 0, msg); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// A pass that stopped before the store's end is continued by the next
// pass, from the page it stopped at, instead of walking the first folders
// again; a pass that reached the end leaves the next to start afresh.
func TestSweepResumesWhereTheLastPassStopped(t *testing.T) {
	ctx := context.Background()
	s := transcript.NewFromBucket(memblob.OpenBucket(nil))
	storeOf(t, ctx, s, "task", 25)
	sw := &Sweeper{Transcript: s, Retention: time.Hour,
		describe: func(context.Context, string) (Execution, error) {
			return Execution{Known: true, Running: true}, nil // nothing expires
		}}
	first := func(res SweepPageResult) string {
		t.Helper()
		if res.Counts.Tasks == 0 {
			t.Fatalf("an empty page: %+v", res)
		}
		return fmt.Sprint(res.Counts.Tasks)
	}
	// Pass 1: pages 1 and 2 (task-00..09, task-10..19), then it dies.
	p1, err := sw.SweepPage(ctx, SweepPageInput{Size: 10})
	if err != nil {
		t.Fatal(err)
	}
	first(p1)
	p2, err := sw.SweepPage(ctx, SweepPageInput{Cursor: p1.Next, Size: 10})
	if err != nil || len(p2.Next) == 0 {
		t.Fatal(p2, err)
	}
	// Pass 2 starts with no cursor and resumes at page 2, whose deletions
	// pass 1 may not have finished.
	var seen []string
	sw.describe = func(_ context.Context, id string) (Execution, error) {
		seen = append(seen, id)
		return Execution{Known: true, Running: true}, nil
	}
	q1, err := sw.SweepPage(ctx, SweepPageInput{Size: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 10 || seen[0] != "task-10" || seen[9] != "task-19" {
		t.Fatalf("the next pass began with %v, want task-10..task-19", seen)
	}
	seen = nil
	q2, err := sw.SweepPage(ctx, SweepPageInput{Cursor: q1.Next, Size: 10})
	if err != nil || len(seen) != 5 || seen[0] != "task-20" {
		t.Fatalf("its second page: %v %+v %v", seen, q2, err)
	}
	if len(q2.Next) != 0 {
		t.Fatalf("no mounts, so the store's end: %q", q2.Next)
	}
	// The end was reached: the pass after starts from the first folder.
	seen = nil
	if _, err := sw.SweepPage(ctx, SweepPageInput{Size: 10}); err != nil || len(seen) == 0 || seen[0] != "task-00" {
		t.Fatalf("after a whole pass: %v %v", seen, err)
	}
	// A persisted cursor the store no longer takes fails that attempt
	// and is dropped: the retry starts afresh.
	if err := s.PutState(ctx, cursorName(ctx), savedCursor{Cursor: encodeCursor(sweepCursor{Mount: "gone"})}); err != nil {
		t.Fatal(err)
	}
	sw.Files, sw.Mounts = mount.NewStore(), mount.Mounts{}
	defer sw.Files.Close()
	if res, err := sw.SweepPage(ctx, SweepPageInput{Size: 10}); err != nil || res.Counts.Tasks != 0 || len(res.Next) != 0 {
		t.Fatalf("a cursor into a mount no longer configured moves on to the end: %+v %v", res, err)
	}
	seen = nil
	if _, err := sw.SweepPage(ctx, SweepPageInput{Size: 10}); err != nil || len(seen) == 0 || seen[0] != "task-00" {
		t.Fatalf("then afresh: %v %v", seen, err)
	}
}

// The sweep dates a transcript no run writes any more by small markers
// (its seal, or the date an earlier sweep recorded), so a task is listed
// object by object at most once; a running or closed task Temporal knows
// is never listed object by object.
func TestSweepDatesTasksByMarkers(t *testing.T) {
	ctx := context.Background()
	var sw faultblob.Switch
	var mu sync.Mutex
	listed := map[string]int{} // task ID -> listings of its objects (not its folder names)
	sw.ObserveLists(func(prefix, delimiter string) {
		rest, ok := strings.CutPrefix(prefix, "tasks/")
		if !ok || delimiter != "" {
			return
		}
		id, _, _ := strings.Cut(rest, "/")
		mu.Lock()
		listed[id]++
		mu.Unlock()
	})
	s := transcript.NewFromBucket(faultblob.Wrap(memblob.OpenBucket(nil), &sw))
	ids := storeOf(t, ctx, s, "t", 3) // running, closed long ago and sealed, unknown to Temporal
	clock := time.Now().Add(30 * time.Minute)
	start, closed := clock, clock.Add(-10*time.Minute)
	seals := 0
	sweeper := &Sweeper{Transcript: s, Retention: time.Hour, Now: func() time.Time { return clock },
		describe: func(_ context.Context, id string) (Execution, error) {
			switch id {
			case ids[0]:
				return Execution{Known: true, Running: true, FirstRunID: "first-" + id}, nil
			case ids[1]:
				return Execution{Known: true, FirstRunID: "first-" + id, RunID: "last", CloseTime: closed}, nil
			}
			return Execution{}, nil
		},
		seal: func(ctx context.Context, id string, f transcript.Folder, e Execution) error {
			seals++
			return s.PutJSON(ctx, transcript.Key{TaskID: id, FirstRunID: f.FirstRunID()}, SealedName,
				sealMark{Entries: 1, SealedAt: contract.FormatTime(clock), Run: e.RunID, ClosedAt: contract.FormatTime(e.CloseTime)})
		},
	}
	pass := func() SweepPageResult {
		t.Helper()
		res, err := sweeper.SweepPage(ctx, SweepPageInput{Size: 100})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := pass()
	if len(res.Expired) != 0 || res.Counts.Sealed != 1 || seals != 1 {
		t.Fatalf("first pass: %+v, %d seals", res, seals)
	}
	// Listed: the closed task once (to seal it), the unknown one once (to
	// date it); the running one never.
	if listed[ids[0]] != 0 || listed[ids[1]] != 1 || listed[ids[2]] != 1 {
		t.Fatalf("first pass listed %v", listed)
	}
	var d transcript.Dated
	if err := s.GetJSON(ctx, transcript.Key{TaskID: ids[2], FirstRunID: "first-" + ids[2]}, transcript.DatedName, &d); err != nil || d.Newest.IsZero() {
		t.Fatalf("the unknown task's date: %+v %v", d, err)
	}
	clear(listed)
	res = pass()
	if len(res.Expired) != 0 || res.Counts.Kept != 3 || seals != 1 {
		t.Fatalf("second pass: %+v, %d seals", res, seals)
	}
	if len(listed) != 0 {
		t.Fatalf("the second pass listed objects: %v", listed)
	}
	// An hour later: the closed task expires by its close, the unknown
	// one by its recorded date, without a listing; the running one stays.
	clock = clock.Add(time.Hour)
	res = pass()
	sort.Strings(res.Expired)
	if strings.Join(res.Expired, ",") != ids[1]+","+ids[2] || len(listed) != 0 {
		t.Fatalf("an hour later: expired %v, listed %v", res.Expired, listed)
	}
	// Once Temporal forgets the closed task, its seal dates it.
	running := sweeper.describe
	sweeper.describe = func(ctx context.Context, id string) (Execution, error) {
		if id == ids[1] {
			return Execution{}, nil
		}
		return running(ctx, id)
	}
	clock = start
	res = pass()
	if len(res.Expired) != 0 || len(listed) != 0 {
		t.Fatalf("dated by the seal's close (10m before): expired %v, listed %v", res.Expired, listed)
	}
	clock = start.Add(time.Hour)
	if res = pass(); strings.Join(res.Expired, ",") != ids[1]+","+ids[2] || len(listed) != 0 {
		t.Fatalf("and expired by it: expired %v, listed %v", res.Expired, listed)
	}
}

// A deleted task whose transcript stays for a live continuation is kept,
// counted, and never deleted again; once its continuation is gone (here
// removed by a worker of an earlier release, which releases nothing), the
// next sweep expires what is left.
func TestSweepKeepsWhatALiveContinuationReads(t *testing.T) {
	ctx := context.Background()
	s := transcript.NewFromBucket(memblob.OpenBucket(nil))
	chainOf(t, ctx, s)
	if r, err := (Storage{Transcript: s}).Purge(ctx, "base"); err != nil || len(r.Kept) != 1 {
		t.Fatal(r, err)
	}
	sw := &Sweeper{Transcript: s, Retention: time.Hour, Now: func() time.Time { return time.Now().Add(2 * time.Hour) },
		describe: func(_ context.Context, id string) (Execution, error) {
			if id == "base" {
				return Execution{}, nil // deleted
			}
			return Execution{Known: true, Running: true, FirstRunID: map[string]string{"mid": "m0", "tip": "t0"}[id]}, nil
		}}
	res, err := sw.SweepPage(ctx, SweepPageInput{Size: 100})
	if err != nil || len(res.Expired) != 0 || res.Counts.KeptForContinuations != 1 || res.Counts.Kept != 3 {
		t.Fatalf("while mid lives: %+v %v", res, err)
	}
	if _, _, err := s.DeleteTaskPage(ctx, "mid", 100); err != nil {
		t.Fatal(err)
	}
	res, err = sw.SweepPage(ctx, SweepPageInput{Size: 100})
	if err != nil || strings.Join(res.Expired, ",") != "base" || res.Counts.KeptForContinuations != 0 {
		t.Fatalf("after mid is gone: %+v %v", res, err)
	}
}

// Files uploaded for a task that never started (a space with no
// transcript) expire by the age of the newest file, after the store's task
// folders; a space whose task has a transcript is judged with it, one
// whose task runs is kept.
func TestSweepExpiresSpacesWithoutATranscript(t *testing.T) {
	ctx := context.Background()
	s := transcript.NewFromBucket(memblob.OpenBucket(nil))
	storeOf(t, ctx, s, "started", 1)
	files := mount.NewStore()
	defer files.Close()
	url := "file://" + filepath.ToSlash(t.TempDir())
	spec := mount.Spec{Root: "task", URL: url}
	for _, id := range []string{"started-00", "never-started", "running-no-transcript", "another/never"} {
		if _, _, err := files.Upload(ctx, spec, id, "notes.txt", "text/plain", strings.NewReader("notes")); err != nil {
			t.Fatal(err)
		}
	}
	clock := time.Now().Add(2 * time.Hour)
	sw := &Sweeper{Transcript: s, Files: files, Mounts: mount.Mounts{"files": url, "empty": "file://" + filepath.ToSlash(t.TempDir())},
		Retention: 3 * time.Hour, Now: func() time.Time { return clock },
		describe: func(_ context.Context, id string) (Execution, error) {
			if id == "running-no-transcript" {
				return Execution{Known: true, Running: true}, nil
			}
			return Execution{}, nil
		}}
	pass := func(retention time.Duration) ([]string, SweepTotals) {
		t.Helper()
		var expired []string
		var totals SweepTotals
		var cursor []byte
		for pages := 0; ; pages++ {
			res, err := sw.SweepPage(ctx, SweepPageInput{Retention: retention, Cursor: cursor, Size: 2})
			if err != nil {
				t.Fatal(err)
			}
			expired = append(expired, res.Expired...)
			totals = totals.add(res.Counts)
			if cursor = res.Next; len(cursor) == 0 {
				break
			}
			if pages > 20 {
				t.Fatal("the pages never end")
			}
		}
		sort.Strings(expired)
		return expired, totals
	}
	// Files 2h old, retention 3h: kept.
	expired, totals := pass(3 * time.Hour)
	if len(expired) != 0 || totals.Spaces != 3 || totals.Tasks != 1 {
		t.Fatalf("within the retention: expired %v, %+v", expired, totals)
	}
	// Retention 1h: the spaces of the tasks that never started expire;
	// the task with a transcript expires as a task (unknown to Temporal,
	// its objects old), the running one stays.
	expired, totals = pass(time.Hour)
	if strings.Join(expired, ",") != "another/never,never-started,started-00" || totals.Spaces != 3 || totals.Kept != 1 {
		t.Fatalf("past the retention: expired %v, %+v", expired, totals)
	}
}
