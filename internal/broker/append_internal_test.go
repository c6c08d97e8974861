package broker

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agenttask/agenttask/internal/broker/embedded"
)

// Nats-Expected-Last-Subject-Sequence 0 must mean "no message on this
// subject yet", not "no check": the first event of every run relies on it.
func TestExpectedLastSubjectSequenceZero(t *testing.T) {
	s, err := embedded.Start(embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := Connect(ctx, s.URL(), "broker-test")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pub := func() error {
		_, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: "runs.zero", Data: []byte(`{"id":1}`)},
			jetstream.WithExpectLastSequencePerSubject(0))
		return err
	}
	if err := pub(); err != nil {
		t.Fatalf("first publish expecting 0: %v", err)
	}
	if err := pub(); !isConflict(err) {
		t.Fatalf("second publish expecting 0: %v, want a wrong-last-sequence conflict", err)
	}
}
