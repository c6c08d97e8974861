package broker_test

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
)

// rawStream is the runs stream through a plain NATS client: what is
// stored, as an operator (or an intruder) reads it.
func rawStream(t *testing.T) jetstream.Stream {
	t.Helper()
	nc, err := nats.Connect(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(testCtx(t), broker.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// When every event of a run has expired (MaxAge; here the subject is
// purged, which JetStream does the same way: the stream's last sequence
// stays), the run's next event does not start again at a low ID: IDs are
// stream sequences. A client resuming with the Last-Event-ID it held
// before the quiet hour reads the new turn whole.
func TestIDsNeverRestartAfterARunsEventsExpire(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)
	w, err := b.Open(ctx, run, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	w.Text("turn one")
	if err := w.Done(ctx, "end", contract.Usage{}, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	first := follow(t, b, run, 0, 0)
	held := first[len(first)-1].ID // the client's Last-Event-ID

	subj, _ := broker.Subject(run)
	if err := rawStream(t).Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
		t.Fatal(err)
	}
	w2, err := b.Open(ctx, run, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	w2.Text("turn two")
	if err := w2.Done(ctx, "end", contract.Usage{}, nil); err != nil {
		t.Fatal(err)
	}
	resumed := follow(t, b, run, held, 0)
	checkIDs(t, resumed, held)
	if len(resumed) != 2 || resumed[0].Text != "turn two" || resumed[0].Answer != 1 || resumed[1].Type != broker.TypeDone {
		t.Fatalf("resumed after the expiry with Last-Event-ID %d: %+v", held, resumed)
	}
}

// A Last-Event-ID beyond the stream's last sequence cannot be one of this
// stream's (its store was lost and the stream made anew): the run is read
// from its first event rather than skipped.
func TestFollowAfterAnIDTheStreamNeverGaveReadsFromTheStart(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)
	if _, err := b.Append(ctx, run, broker.Event{Type: broker.TypeText, Text: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(ctx, run, broker.Event{Type: broker.TypeDone}); err != nil {
		t.Fatal(err)
	}
	got := follow(t, b, run, 1<<40, 0)
	if len(got) != 2 || got[0].Text != "a" {
		t.Fatalf("events %+v", got)
	}
}

// Answers are counted per turn: a JSON answer asked again in the same
// attempt (Fail with the interruption, then Open) is the turn's answer 2;
// an answer left unfinished by the same attempt (its end was lost) is
// interrupted by the next Open all the same, never spliced; the next turn
// starts again at 1.
func TestAnswersAreCountedPerTurn(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)
	w1, err := b.Open(ctx, run, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	w1.Text(`{"other": 1}`)
	if err := w1.Fail(ctx, broker.CodeStreamInterrupted, "did not fit"); err != nil {
		t.Fatal(err)
	}
	w1.Close()
	w2, err := b.Open(ctx, run, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if w2.Answer() != 2 {
		t.Errorf("the answer asked again is %d, want 2", w2.Answer())
	}
	w2.Text(`{"oth`)
	w2.Close() // its end is lost
	w3, err := b.Open(ctx, run, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if w3.Answer() != 3 {
		t.Errorf("the third answer is %d, want 3", w3.Answer())
	}
	w3.Text(`{"reply": "ok"}`)
	if err := w3.Done(ctx, "end", contract.Usage{}, nil); err != nil {
		t.Fatal(err)
	}
	w3.Close()
	w4, err := b.Open(ctx, run, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w4.Close()
	if w4.Answer() != 1 {
		t.Errorf("turn 2's first answer is %d", w4.Answer())
	}
	got := follow(t, b, run, 0, 0)
	var kinds []string
	for _, e := range got {
		k := e.Type
		if e.Interrupted() {
			k = "cut"
		}
		kinds = append(kinds, k+string(rune('0'+e.AnswerNumber())))
	}
	if want := []string{"text1", "cut1", "text2", "cut2", "text3", "done3"}; !equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
