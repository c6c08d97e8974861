package broker_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/broker/embedded"
)

// One server for the package; each test uses its own run IDs.
var serverURL string

func TestMain(m *testing.M) {
	s, err := embedded.Start(embedded.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverURL = s.URL()
	code := m.Run()
	s.Shutdown()
	os.Exit(code)
}

var runSeq atomic.Int64

// newRun names a run no other test uses.
func newRun(t *testing.T) string {
	return fmt.Sprintf("run-%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), runSeq.Add(1))
}

func connect(t *testing.T, url string) *broker.Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := broker.Connect(ctx, url, "broker-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// follow reads events until one of type done, or n events when n > 0.
func follow(t *testing.T, b *broker.Broker, runID string, after int64, n int) []broker.Event {
	t.Helper()
	ctx := testCtx(t)
	f, err := b.Follow(ctx, runID, after)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []broker.Event
	for n <= 0 || len(got) < n {
		e, err := f.Next(ctx)
		if err != nil {
			t.Fatalf("after %d events %+v: %v", len(got), got, err)
		}
		got = append(got, e)
		if n <= 0 && e.Type == broker.TypeDone {
			break
		}
	}
	return got
}

// checkIDs checks that events carry increasing IDs, all after after: an
// ID is the event's stream sequence, so other runs' events leave gaps.
func checkIDs(t *testing.T, events []broker.Event, after int64) {
	t.Helper()
	for i, e := range events {
		if e.ID <= after {
			t.Fatalf("event %d has ID %d, not after %d: %+v", i, e.ID, after, events)
		}
		after = e.ID
	}
}

func TestSubjectRefusesBadRunIDs(t *testing.T) {
	for _, id := range []string{"a.b", "a*", "a>", "", "a b", strings.Repeat("x", 201)} {
		if s, err := broker.Subject(id); err == nil {
			t.Errorf("Subject(%q) = %q, want an error", id, s)
		} else if !strings.Contains(err.Error(), "A-Z, a-z, 0-9") {
			t.Errorf("Subject(%q): %v does not name the rule", id, err)
		}
	}
	if s, err := broker.Subject("run-abc_123"); err != nil || s != "runs.run-abc_123" {
		t.Errorf("Subject = %q, %v", s, err)
	}
	if _, err := broker.Subject(strings.Repeat("x", 200)); err != nil {
		t.Error(err)
	}
}

func TestAppendNumbersEachRun(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	runA, runB := newRun(t), newRun(t)
	var ids []int64 // of runA
	last := int64(0)
	for i := int64(1); i <= 3; i++ {
		for _, run := range []string{runA, runB} {
			e, err := b.Append(ctx, run, broker.Event{Type: broker.TypeText, Text: fmt.Sprint(i)})
			if err != nil {
				t.Fatal(err)
			}
			if e.ID <= last {
				t.Fatalf("%s: ID %d, not after %d", run, e.ID, last)
			}
			last = e.ID
			if run == runA {
				ids = append(ids, e.ID)
			}
		}
	}
	got := follow(t, b, runA, 0, 3)
	checkIDs(t, got, 0)
	for i, e := range got {
		if e.ID != ids[i] {
			t.Errorf("event %d read with ID %d, appended as %d", i, e.ID, ids[i])
		}
	}
	if got[2].Text != "3" {
		t.Errorf("third event %+v", got[2])
	}
}

func TestConcurrentAppendsNeverShareAnID(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)
	const writers, each = 10, 10
	var wg sync.WaitGroup
	ids := make(chan int64, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				e, err := b.Append(ctx, run, broker.Event{Type: broker.TypeText, Text: fmt.Sprintf("%d/%d", w, i)})
				if err != nil {
					t.Error(err)
					return
				}
				ids <- e.ID
			}
		})
	}
	wg.Wait()
	close(ids)
	seen := map[int64]bool{}
	for id := range ids {
		if seen[id] {
			t.Fatalf("ID %d returned twice", id)
		}
		seen[id] = true
	}
	got := follow(t, b, run, 0, writers*each)
	checkIDs(t, got, 0)
	for _, e := range got {
		if !seen[e.ID] {
			t.Fatalf("ID %d read, never returned by Append", e.ID)
		}
	}
}

func TestWriterStreamsTextThenDone(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)
	w, err := b.Open(ctx, run, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	deltas := []string{"Hello", ", ", "wörld", "! <b>&</b>"}
	for _, d := range deltas {
		w.Text(d)
	}
	if !w.SentText() {
		t.Error("SentText is false after Text")
	}
	usage := contract.Usage{InputTokens: 3, OutputTokens: 4}
	if err := w.Done(ctx, "end_turn", usage, []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	got := follow(t, b, run, 0, 0)
	checkIDs(t, got, 0)
	text := ""
	for _, e := range got[:len(got)-1] {
		if e.Type != broker.TypeText || e.Turn != 1 || e.Attempt != 1 {
			t.Fatalf("not a text event of turn 1 attempt 1: %+v", e)
		}
		text += e.Text
	}
	if want := strings.Join(deltas, ""); text != want {
		t.Errorf("text %q, want %q", text, want)
	}
	done := got[len(got)-1]
	if done.StopReason != "end_turn" || done.Usage == nil || *done.Usage != usage || string(done.JSON) != `{"a":1}` {
		t.Errorf("done event %+v", done)
	}
	if err := w.Err(); err != nil {
		t.Error(err)
	}
}

func TestWriterCoalescesDeltas(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)
	w, err := b.Open(ctx, run, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var want strings.Builder
	for i := range 1000 {
		d := fmt.Sprintf("%d ", i)
		want.WriteString(d)
		w.Text(d)
	}
	if err := w.Done(ctx, "end_turn", contract.Usage{}, nil); err != nil {
		t.Fatal(err)
	}
	got := follow(t, b, run, 0, 0)
	checkIDs(t, got, 0)
	text := ""
	for _, e := range got[:len(got)-1] {
		text += e.Text
	}
	if text != want.String() {
		t.Fatalf("text differs: %d bytes, want %d", len(text), want.Len())
	}
	if texts := len(got) - 1; texts > 100 {
		t.Errorf("%d text events for 1000 deltas", texts)
	} else {
		t.Logf("%d text events for 1000 deltas", texts)
	}
}

func TestWriterSplitsLargeText(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)
	w, err := b.Open(ctx, run, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	big := strings.Repeat("é\x01<", 100_000) // 400 KB, 1.1 MB as JSON if unsplit
	w.Text(big)
	if err := w.Done(ctx, "end_turn", contract.Usage{}, nil); err != nil {
		t.Fatal(err)
	}
	got := follow(t, b, run, 0, 0)
	text := ""
	for _, e := range got[:len(got)-1] {
		text += e.Text
	}
	if text != big {
		t.Fatalf("text differs: %d bytes, want %d", len(text), len(big))
	}
}

func TestOpenInterruptsAnEarlierAttemptsText(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)

	w1, err := b.Open(ctx, run, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	w1.Text("half an ans")
	w1.Close() // abandoned: no done, no error

	w2, err := b.Open(ctx, run, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	w2.Text("the answer")
	if err := w2.Done(ctx, "end_turn", contract.Usage{}, nil); err != nil {
		t.Fatal(err)
	}
	got := follow(t, b, run, 0, 0)
	checkIDs(t, got, 0)
	if len(got) != 4 {
		t.Fatalf("events %+v", got)
	}
	if e := got[0]; e.Type != broker.TypeText || e.Attempt != 1 || e.Text != "half an ans" {
		t.Errorf("first %+v", e)
	}
	if e := got[0]; e.AnswerNumber() != 1 {
		t.Errorf("first answer %d", e.Answer)
	}
	if e := got[1]; !e.Interrupted() || e.Turn != 1 || e.Attempt != 2 || e.Answer != 1 || e.Message == "" {
		t.Errorf("second (the interruption of answer 1) %+v", e)
	}
	if e := got[2]; e.Type != broker.TypeText || e.Attempt != 2 || e.Answer != 2 || e.Text != "the answer" {
		t.Errorf("third %+v", e)
	}
	if e := got[3]; e.Type != broker.TypeDone || e.Attempt != 2 || e.Answer != 2 {
		t.Errorf("fourth %+v", e)
	}

	// The first attempt again, as a zombie: refused.
	if _, err := b.Open(ctx, run, 1, 1); err != broker.ErrStale {
		t.Errorf("Open of attempt 1 after attempt 2: %v, want ErrStale", err)
	}

	// The next turn, after a done: no interruption.
	w3, err := b.Open(ctx, run, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w3.Close()
	w3.Text("turn two")
	if err := w3.Done(ctx, "end_turn", contract.Usage{}, nil); err != nil {
		t.Fatal(err)
	}
	next := follow(t, b, run, got[3].ID, 0)
	checkIDs(t, next, got[3].ID)
	if len(next) != 2 || next[0].Type != broker.TypeText || next[0].Turn != 2 || next[0].Answer != 1 {
		t.Errorf("turn 2 events %+v", next)
	}
	if _, err := b.Open(ctx, run, 1, 3); err != broker.ErrStale {
		t.Errorf("Open of turn 1 after turn 2: %v, want ErrStale", err)
	}
}

func TestZombieWriterStopsWhenALaterAttemptTookOver(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)
	zombie, err := b.Open(ctx, run, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer zombie.Close()
	zombie.Text("one")
	if err := zombie.Fail(ctx, broker.CodeStreamInterrupted, "retried"); err != nil {
		t.Fatal(err)
	}
	w2, err := b.Open(ctx, run, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	w2.Text("two")
	if err := w2.Done(ctx, "end_turn", contract.Usage{}, nil); err != nil {
		t.Fatal(err)
	}
	// The zombie's tail is old: its publish conflicts and it sees attempt 2.
	if err := zombie.Done(ctx, "end_turn", contract.Usage{}, nil); err != broker.ErrStale {
		t.Errorf("zombie Done: %v, want ErrStale", err)
	}
	if err := zombie.Err(); err != broker.ErrStale {
		t.Errorf("zombie Err: %v, want ErrStale", err)
	}
	got := follow(t, b, run, 0, 0)
	checkIDs(t, got, 0)
	if len(got) != 4 { // text, interruption (from Fail: none added), text, done
		t.Errorf("events %+v", got)
	}
	if got[2].Answer != 2 {
		t.Errorf("the retried attempt's text is answer %d, want 2", got[2].Answer)
	}
}

// A zombie attempt that never failed (its worker was cut off) keeps
// writing after the next attempt took over: the interruption carries the
// new attempt, so the zombie's next publish is refused, and no text of
// the two attempts is spliced.
func TestZombieCutOffMidTextCannotSpliceAfterTheTakeOver(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)
	zombie, err := b.Open(ctx, run, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer zombie.Close()
	zombie.Text("half")
	follow(t, b, run, 0, 1) // published
	w2, err := b.Open(ctx, run, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	zombie.Text(" and more")
	if err := zombie.Done(ctx, "end_turn", contract.Usage{}, nil); err != broker.ErrStale {
		t.Errorf("zombie Done: %v, want ErrStale", err)
	}
	w2.Text("whole")
	if err := w2.Done(ctx, "end_turn", contract.Usage{}, nil); err != nil {
		t.Fatal(err)
	}
	got := follow(t, b, run, 0, 0)
	checkIDs(t, got, 0)
	if len(got) != 4 || got[0].Text != "half" || got[1].Code != broker.CodeStreamInterrupted || got[1].Attempt != 2 ||
		got[2].Text != "whole" || got[2].Attempt != 2 || got[3].Type != broker.TypeDone || got[3].Attempt != 2 {
		t.Errorf("events %+v", got)
	}
	if w2.TurnDone() {
		t.Error("attempt 2 opened after text, not after done")
	}
	w3, err := b.Open(ctx, run, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer w3.Close()
	if !w3.TurnDone() {
		t.Error("attempt 3 opened after the turn's done")
	}
}

func TestFollowSkipsToAfterThenDeliversLive(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)
	for i := range 5 {
		if _, err := b.Append(ctx, run, broker.Event{Type: broker.TypeText, Text: fmt.Sprint(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	all := follow(t, b, run, 0, 5)
	f, err := b.Follow(ctx, run, all[2].ID)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, want := range all[3:] {
		e, err := f.Next(ctx)
		if err != nil || e.ID != want.ID || e.Text != want.Text {
			t.Fatalf("Next = %+v, %v; want %+v", e, err, want)
		}
	}
	// Nothing more yet: Next waits.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	if e, err := f.Next(short); err == nil {
		t.Fatalf("Next returned %+v before anything was published", e)
	}
	cancel()
	go func() {
		time.Sleep(100 * time.Millisecond)
		if _, err := b.Append(context.Background(), run, broker.Event{Type: broker.TypeDone}); err != nil {
			t.Error(err)
		}
	}()
	e, err := f.Next(ctx)
	if err != nil || e.ID <= all[4].ID || e.Type != broker.TypeDone {
		t.Fatalf("live event %+v, %v", e, err)
	}
}

func TestWriterOnAClosedConnectionStops(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	w, err := b.Open(ctx, newRun(t), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	for range 10_000 {
		w.Text("x") // never blocks on the network: a block would hang the test
	}
	deadline := time.Now().Add(30 * time.Second)
	for w.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if w.Err() == nil {
		t.Fatal("Err is nil after the connection closed")
	}
	w.Text("after the error") // dropped, no panic
	if err := w.Done(ctx, "end_turn", contract.Usage{}, nil); err == nil {
		t.Error("Done succeeded on a closed connection")
	}
	w.Close() // returns: its flush is bounded by the writer's own timeout
}

func TestRestartKeepsEventsAndNumbering(t *testing.T) {
	dir := t.TempDir()
	ctx := testCtx(t)
	run := newRun(t)
	s, err := embedded.Start(embedded.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.Connect(ctx, s.URL(), "broker-test")
	if err != nil {
		t.Fatal(err)
	}
	var before broker.Event
	for range 2 {
		if before, err = b.Append(ctx, run, broker.Event{Type: broker.TypeText, Text: "before"}); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	s.Shutdown()

	s, err = embedded.Start(embedded.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	b = connect(t, s.URL())
	e, err := b.Append(ctx, run, broker.Event{Type: broker.TypeDone})
	if err != nil {
		t.Fatal(err)
	}
	if e.ID <= before.ID {
		t.Errorf("ID after restart %d, not after %d", e.ID, before.ID)
	}
	got := follow(t, b, run, 0, 0)
	checkIDs(t, got, 0)
	if len(got) != 3 || got[0].Text != "before" {
		t.Errorf("events after restart %+v", got)
	}
}

func TestConnectGivesUpWhenCtxEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if b, err := broker.Connect(ctx, "nats://127.0.0.1:1", "broker-test"); err == nil {
		b.Close()
		t.Fatal("Connect succeeded with no server")
	}
}

func TestOpenInterruptsTextLeftByAnEarlierTurn(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)
	w1, err := b.Open(ctx, run, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	w1.Text("cut")
	w1.Close()
	w2, err := b.Open(ctx, run, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if err := w2.Done(ctx, "end_turn", contract.Usage{}, nil); err != nil {
		t.Fatal(err)
	}
	got := follow(t, b, run, 0, 0)
	checkIDs(t, got, 0)
	if len(got) != 3 || !got[1].Interrupted() || got[1].Turn != 2 || got[1].Attempt != 1 || got[2].Answer != 1 {
		t.Errorf("events %+v", got)
	}
}

func TestRedactHidesThePassword(t *testing.T) {
	got := broker.Redact("nats://app:s3cret@nats.internal:4222")
	if strings.Contains(got, "s3cret") || !strings.Contains(got, "nats.internal:4222") {
		t.Errorf("Redact = %q", got)
	}
	if _, err := broker.Connect(testCtxShort(t), "nats://app:s3cret@127.0.0.1:1", "t"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Connect's error shows the password or is nil: %v", err)
	}
}

func testCtxShort(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}
