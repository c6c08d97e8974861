package broker_test

import (
	"testing"

	"github.com/agenttask/agenttask/internal/broker"
)

func TestPurgeRemovesOneRunsEventsOnly(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	gone, kept := newRun(t), newRun(t)
	for range 3 {
		for _, run := range []string{gone, kept} {
			if _, err := b.Append(ctx, run, broker.Event{Type: broker.TypeText, Text: "x"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n, err := b.Purge(ctx, gone); err != nil || n != 3 {
		t.Fatalf("purge: %d, %v; want 3 events", n, err)
	}
	if n, err := b.Purge(ctx, gone); err != nil || n != 0 {
		t.Fatalf("second purge: %d, %v; want 0", n, err)
	}
	if got := follow(t, b, kept, 0, 3); len(got) != 3 {
		t.Fatalf("the other run kept %d events, want 3", len(got))
	}
	if _, err := b.Purge(ctx, "bad.id"); err == nil {
		t.Fatal("a run ID that is no subject token was purged")
	}
}
