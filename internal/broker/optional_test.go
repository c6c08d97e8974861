package broker_test

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/broker/embedded"
)

// closedPort is a loopback port nothing listens on (yet).
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// states records Start's onChange calls.
type states chan bool

func (s states) onChange(on bool, why error) {
	if on != (why == nil) {
		panic("onChange: on and why disagree")
	}
	s <- on
}

// await waits for the next reported state and requires it to be want.
func (s states) await(t *testing.T, want bool, within time.Duration) {
	t.Helper()
	select {
	case on := <-s:
		if on != want {
			t.Fatalf("streaming reported on=%v, want %v", on, want)
		}
	case <-time.After(within):
		t.Fatalf("streaming not reported on=%v within %s", want, within)
	}
}

func requireUnavailable(t *testing.T, what string, err error, url string) {
	t.Helper()
	if !errors.Is(err, broker.ErrUnavailable) || !strings.Contains(err.Error(), url) {
		t.Fatalf("%s: %v, want ErrUnavailable naming %s", what, err, url)
	}
}

// Start returns at once without a broker, streaming off, and every call
// fails at once; the broker comes up and streaming turns on by itself; the
// broker goes away (its store with it) and comes back: off, then on again,
// the stream made anew.
func TestStartWithoutABrokerConnectsInTheBackground(t *testing.T) {
	port := closedPort(t)
	url := "nats://127.0.0.1:" + strconv.Itoa(port)
	got := make(states, 10)
	began := time.Now()
	b, err := broker.Start(url, "broker-test", got.onChange)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("Start took %s without a broker", d)
	}
	got.await(t, false, time.Second) // the initial state is reported
	if b.Up() {
		t.Fatal("Up without a broker")
	}
	requireUnavailable(t, "Err", b.Err(), url)
	ctx := testCtx(t)
	run := newRun(t)
	began = time.Now()
	_, err = b.Open(ctx, run, 1, 1)
	requireUnavailable(t, "Open", err, url)
	_, err = b.Append(ctx, run, broker.Event{Type: broker.TypeDone})
	requireUnavailable(t, "Append", err, url)
	_, err = b.Follow(ctx, run, 0)
	requireUnavailable(t, "Follow", err, url)
	if d := time.Since(began); d > time.Second {
		t.Errorf("Open, Append and Follow took %s without a broker: they must fail at once", d)
	}

	s, err := embedded.Start(embedded.Options{Port: port})
	if err != nil {
		t.Fatal(err)
	}
	got.await(t, true, 15*time.Second)
	if err := b.Err(); err != nil {
		t.Fatalf("Err after the broker came up: %v", err)
	}
	if _, err := b.Append(ctx, run, broker.Event{Type: broker.TypeDone}); err != nil {
		t.Fatal(err)
	}

	s.Shutdown() // its temporary store goes too
	got.await(t, false, 15*time.Second)
	_, err = b.Append(ctx, run, broker.Event{Type: broker.TypeDone})
	requireUnavailable(t, "Append after the broker went away", err, url)

	s, err = embedded.Start(embedded.Options{Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	got.await(t, true, 15*time.Second)
	e, err := b.Append(ctx, run, broker.Event{Type: broker.TypeDone})
	if err != nil {
		t.Fatalf("Append on the new server (the stream made again): %v", err)
	}
	if e.ID != 1 {
		t.Errorf("first event on an empty store has ID %d", e.ID)
	}
}

// A writer whose broker goes away mid-answer stops at its next publish
// without waiting: Done fails at once, and queued text is dropped.
func TestWriterStopsAtOnceWhenTheBrokerGoesAway(t *testing.T) {
	port := closedPort(t)
	s, err := embedded.Start(embedded.Options{Port: port})
	if err != nil {
		t.Fatal(err)
	}
	got := make(states, 10)
	b, err := broker.Start(s.URL(), "broker-test", got.onChange)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	got.await(t, true, time.Second) // Start returned with the stream ensured
	ctx := testCtx(t)
	w, err := b.Open(ctx, newRun(t), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Text("Pole ")
	s.Shutdown()
	got.await(t, false, 15*time.Second)
	w.Text("sana")
	began := time.Now()
	err = w.Done(ctx, "end_turn", contract.Usage{}, nil)
	requireUnavailable(t, "Done", err, s.URL())
	if d := time.Since(began); d > time.Second {
		t.Errorf("Done took %s with the broker away", d)
	}
	if w.Err() == nil {
		t.Error("the writer did not stop")
	}
}
