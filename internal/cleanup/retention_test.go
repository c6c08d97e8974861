package cleanup

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob/memblob"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/transcript"
)

func TestParseRetention(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"": DefaultRetention, " 0 ": RetentionOff, "off": RetentionOff, "OFF": RetentionOff, "1m": time.Minute, "36h": 36 * time.Hour, "30d": 30 * 24 * time.Hour, "1d": 24 * time.Hour,
	} {
		got, err := ParseRetention(in)
		if err != nil || got != want {
			t.Fatalf("ParseRetention(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"59s", "-1h", "x", "0d", "1.5d", "d", "10", "1w"} {
		if _, err := ParseRetention(in); err == nil || !strings.Contains(err.Error(), EnvRetention) {
			t.Fatalf("ParseRetention(%q): %v, want a corrective error naming %s", in, err, EnvRetention)
		}
	}
}

func TestSweepEvery(t *testing.T) {
	for ret, want := range map[time.Duration]time.Duration{
		time.Minute: 15 * time.Second, 20 * time.Second: MinSweepEvery, 2 * time.Hour: 30 * time.Minute, DefaultRetention: MaxSweepEvery,
	} {
		if got := SweepEvery(ret); got != want {
			t.Fatalf("SweepEvery(%s) = %s, want %s", ret, got, want)
		}
	}
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	ret := time.Hour
	old, recent := now.Add(-2*time.Hour), now.Add(-10*time.Minute)
	folder := func(run string, newest time.Time) transcript.Folder {
		return transcript.Folder{TaskSegment: "t", FirstRunSegment: run, Newest: newest}
	}
	closed := func(run string, at time.Time) Execution {
		return Execution{Known: true, FirstRunID: run, RunID: run + "-last", CloseTime: at}
	}
	for _, c := range []struct {
		name    string
		folders []transcript.Folder
		exec    Execution
		sealed  bool
		want    Verdict
	}{
		{"running, objects old", []transcript.Folder{folder("r1", old)}, Execution{Known: true, Running: true, FirstRunID: "r1"}, false, Keep},
		{"running again under a reused ID, the old chain old", []transcript.Folder{folder("r2", recent), folder("r1", old)}, Execution{Known: true, Running: true, FirstRunID: "r2"}, false, Keep},
		{"closed long ago", []transcript.Folder{folder("r1", recent)}, closed("r1", old), true, Expire},
		{"closed long ago, never sealed", []transcript.Folder{folder("r1", old)}, closed("r1", old), false, Expire},
		{"closed recently, unsealed", []transcript.Folder{folder("r1", old)}, closed("r1", recent), false, Seal},
		{"closed recently, sealed", []transcript.Folder{folder("r1", old)}, closed("r1", recent), true, Keep},
		{"closed long ago, an older chain written recently", []transcript.Folder{folder("r2", old), folder("r1", recent)}, closed("r2", old), true, Keep},
		{"unknown to Temporal, objects old", []transcript.Folder{folder("r1", old), folder("r0", old)}, Execution{}, false, Expire},
		{"unknown to Temporal, objects recent", []transcript.Folder{folder("r1", recent)}, Execution{}, false, Keep},
		{"unknown to Temporal, one chain recent", []transcript.Folder{folder("r1", recent), folder("r0", old)}, Execution{}, false, Keep},
		{"no objects", nil, Execution{}, false, Keep},
	} {
		if got := Decide(now, ret, c.folders, c.exec, c.sealed); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	if got := Decide(now, 0, []transcript.Folder{folder("r1", old)}, Execution{}, false); got != Keep {
		t.Errorf("retention off: %s", got)
	}
}

// SweepPage lists the store by pages and decides each task: running kept
// however old, closed past the retention expired, recently closed sealed,
// unknown ones dated by their objects.
func TestSweepPage(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	s := transcript.NewFromBucket(b)
	msg := []contract.Message{{Type: "input", TaskIO: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("x")}, CommittedAt: "2026-01-01T00:00:00.000000Z"}}}
	execs := map[string]Execution{}
	clock := time.Now().Add(90 * time.Minute) // every object is 90m old
	for i := range 25 {
		id := fmt.Sprintf("run-%02d", i)
		if err := s.Write(ctx, transcript.Key{TaskID: id, FirstRunID: "first-" + id}, 0, msg); err != nil {
			t.Fatal(err)
		}
		switch i % 4 {
		case 0: // running
			execs[id] = Execution{Known: true, Running: true, FirstRunID: "first-" + id}
		case 1: // closed long ago
			execs[id] = Execution{Known: true, FirstRunID: "first-" + id, CloseTime: clock.Add(-2 * time.Hour)}
		case 2: // closed just now
			execs[id] = Execution{Known: true, FirstRunID: "first-" + id, CloseTime: clock.Add(-10 * time.Minute)}
		} // 3: unknown to Temporal
	}
	var sealed []string
	sw := &Sweeper{Transcript: s, Retention: time.Hour,
		Now: func() time.Time { return clock },
		describe: func(_ context.Context, id string) (Execution, error) {
			return execs[id], nil
		},
		seal: func(_ context.Context, id string, f transcript.Folder, e Execution) error {
			if f.FirstRunID() != e.FirstRunID {
				return fmt.Errorf("sealed folder %s of %s", f.FirstRunID(), id)
			}
			sealed = append(sealed, id)
			return nil
		},
	}
	var expired []string
	var totals SweepTotals
	var cursor []byte
	for pages := 0; ; pages++ {
		res, err := sw.SweepPage(ctx, SweepPageInput{Cursor: cursor, Size: 10})
		if err != nil {
			t.Fatal(err)
		}
		if res.Counts.Tasks > 10 {
			t.Fatalf("a page of 10 looked at %d", res.Counts.Tasks)
		}
		expired = append(expired, res.Expired...)
		totals = totals.add(res.Counts)
		if cursor = res.Next; cursor == nil {
			break
		}
		if pages > 5 {
			t.Fatal("the pages never end")
		}
	}
	sort.Strings(expired)
	var want []string
	for i := range 25 {
		if i%4 == 1 || i%4 == 3 {
			want = append(want, fmt.Sprintf("run-%02d", i))
		}
	}
	if strings.Join(expired, ",") != strings.Join(want, ",") {
		t.Fatalf("expired %v, want %v", expired, want)
	}
	if totals.Tasks != 25 || totals.Kept != 25-len(want) || totals.Sealed != 6 || len(sealed) != 6 {
		t.Fatalf("totals %+v, sealed %v", totals, sealed)
	}

	// A failing Temporal keeps the task.
	describe := sw.describe
	sw.describe = func(context.Context, string) (Execution, error) { return Execution{}, fmt.Errorf("unavailable") }
	res, err := sw.SweepPage(ctx, SweepPageInput{Size: 5})
	if err != nil || len(res.Expired) != 0 || res.Counts.Kept != 5 {
		t.Fatalf("with Temporal failing: %+v %v", res, err)
	}
	// Retention off: nothing expires.
	off := &Sweeper{Transcript: s}
	if res, err := off.SweepPage(ctx, SweepPageInput{}); err != nil || !res.Off || len(res.Expired) != 0 {
		t.Fatalf("retention off: %+v %v", res, err)
	}
	// The schedule's retention rules over the worker's: a worker with
	// none of its own (a Config built in code) judges by the sweep's
	// input, and a longer one there keeps what the worker's would expire.
	off.Now, off.describe, off.seal = sw.Now, describe, sw.seal
	res, err = off.SweepPage(ctx, SweepPageInput{Retention: time.Hour, Size: 4})
	if err != nil || res.Off || len(res.Expired) != 2 {
		t.Fatalf("the sweep's retention on a worker without one: %+v %v", res, err)
	}
	sw.describe = describe
	res, err = sw.SweepPage(ctx, SweepPageInput{Retention: 100 * time.Hour, Size: 4})
	if err != nil || len(res.Expired) != 0 {
		t.Fatalf("a sweep of 100h expired %v (%v)", res.Expired, err)
	}
}

// A page seals at most MaxSealsPerPage tasks: each seal is a query that
// may take up to sealQueryTimeout, and the page must end within its
// timeouts; the rest are sealed by a later sweep.
func TestSweepPageBoundsItsSeals(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	s := transcript.NewFromBucket(b)
	msg := []contract.Message{{Type: "input", TaskIO: contract.TaskIO{Message: []contract.ContentPart{contract.TextPart("x")}, CommittedAt: "2026-01-01T00:00:00.000000Z"}}}
	clock := time.Now()
	for i := range MaxSealsPerPage + 5 {
		id := fmt.Sprintf("closed-%02d", i)
		if err := s.Write(ctx, transcript.Key{TaskID: id, FirstRunID: "first-" + id}, 0, msg); err != nil {
			t.Fatal(err)
		}
	}
	seals := 0
	sw := &Sweeper{Transcript: s, Retention: time.Hour, Now: func() time.Time { return clock },
		describe: func(_ context.Context, id string) (Execution, error) {
			return Execution{Known: true, FirstRunID: "first-" + id, CloseTime: clock.Add(-time.Minute)}, nil
		},
		seal: func(context.Context, string, transcript.Folder, Execution) error { seals++; return nil },
	}
	res, err := sw.SweepPage(ctx, SweepPageInput{Size: 100})
	if err != nil || seals != MaxSealsPerPage || res.Counts.Sealed != MaxSealsPerPage || res.Counts.Kept != MaxSealsPerPage+5 {
		t.Fatalf("seals %d, %+v, %v", seals, res.Counts, err)
	}
}
