package retained

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob/memblob"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/transcript"
)

func entries(from, to, pad int) []contract.Message {
	var out []contract.Message
	for i := from; i < to; i++ {
		out = append(out, contract.Message{Type: contract.TypeInput, TaskIO: contract.TaskIO{
			Message:     []contract.ContentPart{contract.TextPart(fmt.Sprintf("entry %d %s", i, strings.Repeat("x", pad)))},
			CommittedAt: "2026-01-02T03:04:05.000000Z",
		}})
	}
	return out
}

func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Messages reads the newest chain of a task, pages as the query does and
// follows a continuation into the transcript it continues.
func TestMessagesFromTheTranscript(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	s := transcript.NewFromBucket(b)
	old := transcript.Key{TaskID: "run-a", FirstRunID: "r-old"}
	if err := s.Write(ctx, old, 0, entries(0, 2, 0)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	cur := transcript.Key{TaskID: "run-a", FirstRunID: "r-new"}
	all := entries(100, 105, 0)
	if err := s.Write(ctx, cur, 0, all); err != nil {
		t.Fatal(err)
	}

	got, err := Messages(ctx, s, "run-a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if js(t, got) != js(t, all) {
		t.Fatalf("the whole list %s, want the newest chain's %s", js(t, got), js(t, all))
	}
	got, err = Messages(ctx, s, "run-a", &contract.MessagesPage{After: 1, Limit: 2})
	if err != nil || js(t, got) != js(t, all[1:3]) {
		t.Fatalf("page after 1 limit 2: %s %v", js(t, got), err)
	}
	got, err = Messages(ctx, s, "run-a", &contract.MessagesPage{After: 5})
	if err != nil || len(got) != 0 || got == nil {
		t.Fatalf("page past the end: %#v %v", got, err)
	}
	if _, err := Messages(ctx, s, "run-a", &contract.MessagesPage{After: -1}); err == nil {
		t.Fatal("a negative after was accepted")
	}
	if _, err := Messages(ctx, s, "run-none", nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an absent task: %v, want ErrNotFound", err)
	}

	// A continuation with entries of its own, and one with none yet.
	c := transcript.Key{TaskID: "run-c", FirstRunID: "rc", From: 3, Parent: &transcript.Link{TaskID: "run-a", FirstRunID: "r-new"}}
	if err := s.Write(ctx, c, 3, entries(3, 4, 7)); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteLink(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, err = Messages(ctx, s, "run-c", nil)
	if want := append(all[:3:3], entries(3, 4, 7)...); err != nil || js(t, got) != js(t, want) {
		t.Fatalf("the continuation: %s %v, want %s", js(t, got), err, js(t, want))
	}
	e := transcript.Key{TaskID: "run-e", FirstRunID: "re", From: 4, Parent: &transcript.Link{TaskID: "run-c", FirstRunID: "rc", From: 3}}
	if err := s.WriteLink(ctx, e); err != nil {
		t.Fatal(err)
	}
	got, err = Messages(ctx, s, "run-e", &contract.MessagesPage{After: 2})
	if want := append(all[2:3:3], entries(3, 4, 7)...); err != nil || js(t, got) != js(t, want) {
		t.Fatalf("a continuation with no entries of its own: %s %v, want %s", js(t, got), err, js(t, want))
	}
}

// A page stops at contract.MaxPageBytes; the whole list past
// MaxFullListBytes is refused, as the query refuses it.
func TestMessagesBounds(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	s := transcript.NewFromBucket(b)
	k := transcript.Key{TaskID: "run-big", FirstRunID: "r"}
	big := entries(0, 30, 100<<10) // 3 MB
	if err := s.Write(ctx, k, 0, big); err != nil {
		t.Fatal(err)
	}
	page, err := Messages(ctx, s, "run-big", &contract.MessagesPage{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(js(t, page)); len(page) == 0 || len(page) >= 30 || n > contract.MaxPageBytes {
		t.Fatalf("a page of %d entries, %d bytes", len(page), n)
	}
	if _, err := Messages(ctx, s, "run-big", nil); err == nil || !strings.Contains(err.Error(), "by pages") {
		t.Fatalf("the whole list of 3 MB: %v", err)
	}
}
