// Package broker carries a run's streamed model text from the workers that
// produce it to the HTTP API that serves it, through one NATS JetStream
// stream. Each run has its own subject, and its events are numbered 1, 2,
// 3, ... so a client can resume after the last event ID it saw.
package broker

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	// EnvURL names the broker's URL (e.g. nats://127.0.0.1:4222); empty
	// means no broker: nothing is streamed.
	EnvURL = "AGENT_NATS_URL"
	// StreamName is the JetStream stream holding every run's events.
	StreamName = "AGENTTASK_RUNS"
	// Retention is how long events are kept: long enough to reconnect to
	// a running turn, short enough that the stream stays small.
	Retention = time.Hour
)

// maxMsgSize bounds one message; text is cut well below it (see writer.go).
const maxMsgSize = 1 << 20

// Broker is a connection to the NATS server with the runs stream ensured.
type Broker struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
}

func streamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamName,
		Description: "agenttask: each run's streamed model text, subject runs.<run id>",
		Subjects:    []string{subjectPrefix + ">"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		MaxAge:      Retention,
		Discard:     jetstream.DiscardOld,
		MaxMsgSize:  maxMsgSize,
		// Only a retried publish of one event shares a message ID, and
		// it is retried within seconds.
		Duplicates: 2 * time.Minute,
		// Direct gets answer "last message of a subject" without the
		// stream leader's API queue: Append reads one per conflict.
		AllowDirect: true,
	}
}

// Connect dials url (until ctx ends) and ensures the stream exists with
// this package's configuration. The connection then reconnects forever: a
// broker restart must not end a worker or the API.
func Connect(ctx context.Context, url, name string) (*Broker, error) {
	if url == "" {
		return nil, errors.New("broker: no URL (" + EnvURL + " is empty)")
	}
	nc, err := dial(ctx, url, name)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("broker: %w", err)
	}
	stream, err := ensureStream(ctx, js)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &Broker{nc: nc, js: js, stream: stream}, nil
}

// Redact is a broker URL fit for a log or an error: its password hidden.
func Redact(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "(a broker URL that does not parse)"
	}
	return u.Redacted()
}

// dial connects, trying again until ctx ends: a broker that starts
// alongside the process (docker compose) may not listen yet.
func dial(ctx context.Context, url, name string) (*nats.Conn, error) {
	wait := 250 * time.Millisecond
	for {
		nc, err := nats.Connect(url, nats.Name(name), nats.MaxReconnects(-1))
		if err == nil {
			return nc, nil
		}
		if serr := sleep(ctx, wait); serr != nil {
			return nil, fmt.Errorf("broker: connect to %s: %w", Redact(url), err)
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// ensureStream creates or updates the stream. Two processes starting at
// once may both try to create it: the loser sees "already in use" and
// updates instead on the next round.
func ensureStream(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	var err error
	for range 3 {
		var s jetstream.Stream
		if s, err = js.CreateOrUpdateStream(ctx, streamConfig()); err == nil {
			return s, nil
		}
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			break
		}
	}
	return nil, fmt.Errorf("broker: ensure stream %s: %w", StreamName, err)
}

// Close closes the connection; writers and followers on it stop.
func (b *Broker) Close() { b.nc.Close() }
