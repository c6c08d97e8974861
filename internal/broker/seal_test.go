package broker_test

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/codec"
)

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, codec.KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// With a codec, what a reader of the stream sees of a run (text, a JSON
// answer, an error's message) is stored encrypted under the current key,
// which the message names: a broker reading with the key serves it, one
// whose current key has since rotated still reads it, one without keys
// refuses to serve it rather than skip it.
func TestEventsAreStoredEncryptedWithTheCodec(t *testing.T) {
	k1, k2 := newKey(t), newKey(t)
	c1, err := codec.New(codec.Keys{"k1": k1}, "k1")
	if err != nil {
		t.Fatal(err)
	}
	b := connect(t, serverURL)
	b.SetCodec(c1)
	ctx := testCtx(t)
	run := newRun(t)
	w, err := b.Open(ctx, run, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const secret = "Pole sana, Amina: the parcel is at the depot"
	w.Text(secret)
	if err := w.Done(ctx, "end", contract.Usage{InputTokens: 5, OutputTokens: 7}, []byte(`{"reply":"the parcel"}`)); err != nil {
		t.Fatal(err)
	}
	got := follow(t, b, run, 0, 0)
	if len(got) != 2 || got[0].Text != secret || string(got[1].JSON) != `{"reply":"the parcel"}` || got[1].Usage.OutputTokens != 7 {
		t.Fatalf("read back %+v", got)
	}

	subj, _ := broker.Subject(run)
	raw := rawStream(t)
	for _, e := range got {
		m, err := raw.GetMsg(ctx, uint64(e.ID))
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject != subj || bytes.Contains(m.Data, []byte("parcel")) || bytes.Contains(m.Data, []byte("Amina")) {
			t.Errorf("stored message %d holds plaintext: %s", e.ID, m.Data)
		}
		if !bytes.Contains(m.Data, []byte(`"sealed":`)) {
			t.Errorf("stored message %d is not sealed: %s", e.ID, m.Data)
		}
	}

	rotated, err := codec.New(codec.Keys{"k1": k1, "k2": k2}, "k2")
	if err != nil {
		t.Fatal(err)
	}
	other := connect(t, serverURL)
	other.SetCodec(rotated)
	if again := follow(t, other, run, 0, 0); again[0].Text != secret {
		t.Errorf("read with the key rotated: %+v", again)
	}

	plain := connect(t, serverURL)
	f, err := plain.Follow(ctx, run, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if e, err := f.Next(ctx); err == nil || !strings.Contains(err.Error(), codec.EnvKeys) {
		t.Errorf("a broker without keys read %+v, %v; want an error naming %s", e, err, codec.EnvKeys)
	}
}

// Without a codec, events are stored as they are, as before.
func TestEventsAreStoredPlainWithoutACodec(t *testing.T) {
	b := connect(t, serverURL)
	ctx := testCtx(t)
	run := newRun(t)
	e, err := b.Append(ctx, run, broker.Event{Type: broker.TypeText, Text: "plain words"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := rawStream(t).GetMsg(ctx, uint64(e.ID))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(m.Data, []byte(`"text":"plain words"`)) || bytes.Contains(m.Data, []byte(`"id"`)) {
		t.Errorf("stored %s", m.Data)
	}
}
