package broker_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/codec"
)

// A turn that calls tools makes one model call per step: a later step's
// first attempt is not stale behind an earlier step's third, and an
// earlier step is stale behind a later one.
func TestStepsOrderAttemptsWithinATurn(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)

	w, err := b.OpenAt(ctx, run, broker.Position{Turn: 1, Step: 1, Attempt: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.ToolCalls(ctx, []broker.ToolCall{{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"q":"x"}`)}}); err != nil {
		t.Fatal(err)
	}
	w.Close()

	w2, err := b.OpenAt(ctx, run, broker.Position{Turn: 1, Step: 2, Attempt: 1})
	if err != nil {
		t.Fatalf("step 2 attempt 1 after step 1 attempt 3: %v", err)
	}
	defer w2.Close()
	if err := w2.Facts(ctx, []broker.Event{{Type: broker.TypeToolCallFinished, Tool: &broker.ToolCall{ID: "c1", Name: "lookup", Result: "found"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.OpenAt(ctx, run, broker.Position{Turn: 1, Step: 1, Attempt: 4}); err != broker.ErrStale {
		t.Errorf("step 1 after step 2: %v, want ErrStale", err)
	}
	got := follow(t, b, run, 0, 2)
	if e := got[0]; e.Type != broker.TypeToolCallStarted || e.Step != 1 || e.Attempt != 3 || e.Tool == nil || e.Tool.Name != "lookup" || string(e.Tool.Arguments) != `{"q":"x"}` {
		t.Errorf("the tool call %+v (tool %+v)", e, e.Tool)
	}
	// Step 2 took over after step 1's tool calls without an interruption:
	// those calls ran (the workflow went on to step 2).
	if e := got[1]; e.Type != broker.TypeToolCallFinished || e.Step != 2 || e.Fact != 1 {
		t.Errorf("after the tool call %+v, want step 2's fact", e)
	}
}

// A step's facts are published once whatever its attempts: an attempt
// that died after two of three publishes the third only through the next
// attempt, and one that follows an attempt that went on to its text
// publishes none.
func TestFactsArePublishedOnceAcrossAttempts(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)
	facts := []broker.Event{
		{Type: broker.TypeToolCallFinished, Tool: &broker.ToolCall{ID: "a", Name: "one", Result: "1"}},
		{Type: broker.TypeToolCallFinished, Tool: &broker.ToolCall{ID: "b", Name: "two", Result: "2"}},
		{Type: broker.TypeToolCallFinished, Tool: &broker.ToolCall{ID: "c", Name: "three", Result: "3", Error: true}},
	}
	at := broker.Position{Turn: 2, Step: 2, Attempt: 1}
	w1, err := b.OpenAt(ctx, run, at)
	if err != nil {
		t.Fatal(err)
	}
	if err := w1.Facts(ctx, facts[:2]); err != nil { // it dies after two
		t.Fatal(err)
	}
	w1.Close()

	at.Attempt = 2
	w2, err := b.OpenAt(ctx, run, at)
	if err != nil {
		t.Fatal(err)
	}
	if err := w2.Facts(ctx, facts); err != nil {
		t.Fatal(err)
	}
	w2.Text("half")
	w2.Close() // dies mid-text

	at.Attempt = 3
	w3, err := b.OpenAt(ctx, run, at)
	if err != nil {
		t.Fatal(err)
	}
	defer w3.Close()
	if err := w3.Facts(ctx, facts); err != nil {
		t.Fatal(err)
	}
	w3.Text("whole")
	if err := w3.Done(ctx, "end", contract.Usage{}, nil); err != nil {
		t.Fatal(err)
	}

	got := follow(t, b, run, 0, 0)
	var names []string
	for _, e := range got {
		if e.Type == broker.TypeToolCallFinished {
			names = append(names, e.Tool.Name)
			if e.Fact == 0 || e.Tool.Name != facts[e.Fact-1].Tool.Name {
				t.Errorf("fact %d numbered %d", len(names), e.Fact)
			}
		}
	}
	if len(names) != 3 || names[0] != "one" || names[1] != "two" || names[2] != "three" {
		t.Errorf("facts published %v, want one, two, three once each (events %+v)", names, got)
	}
	// Then the cut text, its interruption naming the cut attempt, the
	// whole answer.
	n := len(got)
	if n != 7 {
		t.Fatalf("%d events: %+v", n, got)
	}
	half, cut := got[3], got[4]
	if step, attempt := cut.Cut(); !cut.Interrupted() || cut.Attempt != 3 || step != 2 || attempt != 2 || cut.Answer != half.Answer || half.Text != "half" {
		t.Errorf("interruption %+v (cut %d/%d) of %+v", cut, step, attempt, half)
	}
	if got[5].Text != "whole" || got[5].Answer != cut.Answer+1 || got[6].Type != broker.TypeDone {
		t.Errorf("the answer %+v %+v", got[5], got[6])
	}
}

// An attempt that asked for tool calls and then died (Temporal heard
// nothing) is withdrawn by the next attempt of the same step: its calls
// may differ.
func TestALaterAttemptWithdrawsAnEarlierAttemptsToolCalls(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)
	w1, err := b.OpenAt(ctx, run, broker.Position{Turn: 1, Step: 1, Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := w1.ToolCalls(ctx, []broker.ToolCall{{ID: "x", Name: "refund"}}); err != nil {
		t.Fatal(err)
	}
	w1.Close()
	w2, err := b.OpenAt(ctx, run, broker.Position{Turn: 1, Step: 1, Attempt: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	w2.SetWrapped()
	w2.Text("checked")
	if err := w2.Done(ctx, "end", contract.Usage{}, nil); err != nil {
		t.Fatal(err)
	}
	got := follow(t, b, run, 0, 0)
	if len(got) != 4 {
		t.Fatalf("events %+v", got)
	}
	if step, attempt := got[1].Cut(); !got[1].Interrupted() || step != 1 || attempt != 1 || got[1].Answer != got[0].Answer {
		t.Errorf("withdrawal %+v", got[1])
	}
	if !got[2].Wrapped || got[2].Answer != got[1].Answer+1 {
		t.Errorf("the answer's text %+v: wrapped, answer 2", got[2])
	}
}

// With a codec, a tool call's name, arguments and result are sealed at rest
// and read back whole.
func TestToolCallEventsAreSealed(t *testing.T) {
	c, err := codec.New(codec.Keys{"k1": newKey(t)}, "k1")
	if err != nil {
		t.Fatal(err)
	}
	b := connect(t, serverURL)
	b.SetCodec(c)
	ctx := testCtx(t)
	run := newRun(t)
	e, err := b.Append(ctx, run, broker.Event{Turn: 1, Type: broker.TypeToolCallFinished,
		Tool: &broker.ToolCall{ID: "a", Name: "secret_tool", Result: "a secret result"}})
	if err != nil {
		t.Fatal(err)
	}
	got := follow(t, b, run, 0, 1)
	if got[0].Tool == nil || got[0].Tool.Result != "a secret result" || got[0].Tool.Name != "secret_tool" {
		t.Errorf("read back %+v", got[0])
	}
	m, err := rawStream(t).GetMsg(ctx, uint64(e.ID))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(m.Data); strings.Contains(s, "secret") || !strings.Contains(s, `"sealed":`) {
		t.Errorf("stored %s: the tool call is not sealed", s)
	}
}

// A sub-task publishes under its run's subject (runs.<run>.<path>): each
// is ordered alone (the sub-task's turn 1 is not stale behind its run's
// turn 3), a follower of the run reads both in the order stored, each
// event with its path, LastID counts both, and Purge removes both.
func TestSubTasksPublishUnderTheirRun(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)
	child := run + ".helper.t3.c1"
	if err := broker.CheckTaskID(child); err != nil {
		t.Fatal(err)
	}
	if err := broker.CheckTaskID(run + "..x"); err == nil {
		t.Error("an empty token was accepted")
	}
	w, err := b.OpenAt(ctx, run, broker.Position{Turn: 3, Step: 1, Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.ToolCalls(ctx, []broker.ToolCall{{ID: "c1", Name: "helper"}}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	cw, err := b.OpenAt(ctx, child, broker.Position{Turn: 1, Step: 1, Attempt: 1})
	if err != nil {
		t.Fatalf("the sub-task's turn 1 after its run's turn 3: %v", err)
	}
	cw.Text("found it")
	if err := cw.Done(ctx, "end", contract.Usage{}, nil); err != nil {
		t.Fatal(err)
	}
	cw.Close()
	got := follow(t, b, run, 0, 3)
	if got[0].Path != "" || got[1].Path != "helper.t3.c1" || got[1].Text != "found it" || got[2].Path != "helper.t3.c1" || got[2].Type != broker.TypeDone {
		t.Fatalf("events %+v", got)
	}
	checkIDs(t, got, 0)
	if id, err := b.LastID(ctx, run); err != nil || id != got[2].ID {
		t.Errorf("LastID %d (%v), want the sub-task's last %d", id, err, got[2].ID)
	}
	n, err := b.Purge(ctx, run)
	if err != nil || n != 3 {
		t.Errorf("purged %d (%v), want 3", n, err)
	}
	if id, err := b.LastID(ctx, run); err != nil || id != 0 {
		t.Errorf("after the purge LastID %d (%v)", id, err)
	}
}

// Mixed builds on one queue: a worker of the build before steps opens at
// step 0 (Open). Behind a newer worker's step of the same turn it is
// stale and publishes nothing (less is streamed, nothing fails); a newer
// worker's next turn follows an older one's events as before.
func TestAWriterWithoutStepsYieldsToOneWithThem(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)
	old, err := b.Open(ctx, run, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	old.Text("turn one")
	if err := old.Done(ctx, "end", contract.Usage{}, nil); err != nil {
		t.Fatal(err)
	}
	old.Close()
	w, err := b.OpenAt(ctx, run, broker.Position{Turn: 2, Step: 1, Attempt: 1})
	if err != nil {
		t.Fatalf("a newer worker's turn after an older one's: %v", err)
	}
	if err := w.ToolCalls(ctx, []broker.ToolCall{{ID: "c", Name: "lookup"}}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := b.Open(ctx, run, 2, 2); err != broker.ErrStale {
		t.Errorf("an older worker's attempt of a turn a newer one streams with steps: %v, want ErrStale", err)
	}
}
