package transcript

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agenttask/agenttask/contract"
)

// Continuations of one transcript each write their own; a continuation of a
// continuation reads its ancestors through link objects.
func TestContinuationChain(t *testing.T) {
	backends(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		a := Key{TaskID: "a", FirstRunID: "ra"}
		if err := s.Write(ctx, a, 0, msgs(0, 4, 3)); err != nil {
			t.Fatal(err)
		}
		// Two continuations of a, both from position 3: their entries 3.. differ.
		b1 := Key{TaskID: "b1", FirstRunID: "r1", From: 3, Parent: &Link{TaskID: "a", FirstRunID: "ra"}}
		b2 := Key{TaskID: "b2", FirstRunID: "r2", From: 3, Parent: &Link{TaskID: "a", FirstRunID: "ra"}}
		if err := s.Write(ctx, b1, 3, msgs(3, 6, 1)); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, b2, 3, msgs(3, 5, 9)); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, b1, 2, msgs(2, 3, 3)); err == nil {
			t.Fatal("a continuation wrote below its From")
		}
		got1, err := s.Read(ctx, b1, 0, 6)
		if err != nil {
			t.Fatal(err)
		}
		want1 := append(msgs(0, 3, 3), msgs(3, 6, 1)...)
		if encode(t, got1) != encode(t, want1) {
			t.Fatalf("b1 reads %s", encode(t, got1))
		}
		got2, err := s.Read(ctx, b2, 2, 5)
		if err != nil {
			t.Fatal(err)
		}
		if encode(t, got2) != encode(t, append(msgs(2, 3, 3), msgs(3, 5, 9)...)) {
			t.Fatalf("b2 reads %s", encode(t, got2))
		}

		// c continues b1 from 5; its key names b1 only, so positions below
		// 3 need b1's link object.
		c := Key{TaskID: "c", FirstRunID: "rc", From: 5, Parent: &Link{TaskID: "b1", FirstRunID: "r1", From: 3}}
		if err := s.Write(ctx, c, 5, msgs(5, 7, 2)); err != nil {
			t.Fatal(err)
		}
		fresh := open() // no cached entries
		if _, err := fresh.Read(ctx, c, 0, 7); !errors.Is(err, ErrNotFound) {
			t.Fatalf("without b1's link: %v", err)
		}
		if err := fresh.WriteLink(ctx, b1); err != nil {
			t.Fatal(err)
		}
		if err := fresh.WriteLink(ctx, b1); err != nil {
			t.Fatal("rewriting the same link:", err)
		}
		other := b1
		other.Parent = &Link{TaskID: "x", FirstRunID: "y"}
		if err := fresh.WriteLink(ctx, other); !errors.Is(err, ErrConflict) {
			t.Fatalf("a different link: %v", err)
		}
		got, err := open().Read(ctx, c, 0, 7)
		if err != nil {
			t.Fatal(err)
		}
		want := append(append(msgs(0, 3, 3), msgs(3, 5, 1)...), msgs(5, 7, 2)...)
		if encode(t, got) != encode(t, want) {
			t.Fatalf("c reads %s", encode(t, got))
		}
		first, w, err := open().Window(ctx, c, 7, 1<<20)
		if err != nil || first != 0 || encode(t, w) != encode(t, want) {
			t.Fatalf("window: %d %v", first, err)
		}
	})
}

// PutOnce keeps the first value: a retried writer adopts it.
func TestPutOnce(t *testing.T) {
	backends(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		k := Key{TaskID: "t", FirstRunID: "r"}
		var got contract.Message
		adopted, err := s.PutOnce(ctx, k, "p", msg(1, 1), &got)
		if err != nil || adopted {
			t.Fatal(adopted, err)
		}
		adopted, err = open().PutOnce(ctx, k, "p", msg(3, 5), &got)
		if err != nil || !adopted || encode(t, got) != encode(t, msg(1, 1)) {
			t.Fatal(adopted, err, encode(t, got))
		}
		var again contract.Message
		if err := open().GetOnce(ctx, k, "p", &again); err != nil || encode(t, again) != encode(t, msg(1, 1)) {
			t.Fatal(err)
		}
	})
}

// A made-up chain (a cycle, a parent whose entries start later) is refused
// instead of followed forever.
func TestMalformedChainIsRefused(t *testing.T) {
	ctx := context.Background()
	s := open1(t)
	a := Key{TaskID: "a", FirstRunID: "ra", From: 2, Parent: &Link{TaskID: "b", FirstRunID: "rb", From: 2}}
	b := Key{TaskID: "b", FirstRunID: "rb", From: 2, Parent: &Link{TaskID: "a", FirstRunID: "ra", From: 2}}
	if err := s.WriteLink(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteLink(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, a, 0, 1); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("a cycle: %v", err)
	}
	c := Key{TaskID: "c", FirstRunID: "rc", From: 1, Parent: &Link{TaskID: "a", FirstRunID: "ra", From: 5}}
	if _, err := s.Read(ctx, c, 0, 1); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("a parent starting later: %v", err)
	}
}

func open1(t *testing.T) *Store {
	s, err := Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
