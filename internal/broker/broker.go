// Package broker carries a run's streamed model text from the workers that
// produce it to the HTTP API that serves it, through one NATS JetStream
// stream. Each run has its own subject; an event's ID is its stream
// sequence, which only grows, so a client can resume after the last event
// ID it saw for as long as the run lives.
package broker

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agenttask/agenttask/internal/codec"
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

// Broker is a connection to the NATS server with the runs stream ensured,
// or a connection still being made: the broker is optional at run time.
// The connection is made and remade in the background (nats.go's
// RetryOnFailedConnect and unlimited reconnects); while it is down, or the
// stream could not be ensured, streaming is off (Err says why) and every
// publish or read fails at once with an error matching ErrUnavailable.
type Broker struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	url string // redacted

	onChange  func(on bool, why error)
	trigger   chan struct{} // (re)connected: ensure the stream (capacity 1)
	ctx       context.Context
	cancel    context.CancelFunc // Close
	first     chan struct{}      // closed once the first connection's stream is ensured or refused
	firstOnce sync.Once
	closeOnce sync.Once

	runs  atomic.Pointer[jetstream.Stream] // nil until first ensured
	codec atomic.Pointer[codec.Codec]      // nil: events are stored plain (seal.go)

	mu       sync.Mutex
	up       bool
	why      error // why streaming is off
	connUp   bool  // the last error came from ensuring the stream, connected
	upCh     chan struct{}
	upClosed bool
	// upCtx lives while streaming is on: calls in flight when the broker
	// goes away end at once (whileUp) rather than at their timeouts.
	upCtx    context.Context
	upCancel context.CancelFunc
	reported int // 0 nothing yet, reportedOn, reportedOff
	isClosed bool
}

const (
	reportedOn = 1 + iota
	reportedOff
)

// ErrUnavailable matches the errors of a Broker whose streaming is off: the
// broker cannot be reached now, or its stream is not ensured yet.
var ErrUnavailable = errors.New("broker: unavailable")

// unavailable is Err's error: it reads as why, and matches ErrUnavailable.
type unavailable struct {
	msg   string
	cause error
}

func (e *unavailable) Error() string        { return e.msg + ": " + e.cause.Error() }
func (e *unavailable) Unwrap() error        { return e.cause }
func (e *unavailable) Is(target error) bool { return target == ErrUnavailable }

const (
	// reconnectWait spaces connection attempts (nats.go adds its jitter).
	reconnectWait = time.Second
	// pingInterval is how often the client pings the server: a broker
	// cut off without a closed socket is noticed within about 3 of them.
	pingInterval = 10 * time.Second
	// ensureTimeout bounds creating or updating the stream after a
	// connect; ensureRetry spaces tries while connected.
	ensureTimeout = 10 * time.Second
	ensureRetry   = 5 * time.Second
)

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

// Start connects to url in the background and returns at once when the
// broker cannot be reached: the connection is tried again every second,
// without end, and remade whenever it is lost (a broker restart or outage
// ends no worker and no API). When the first try connects, Start returns
// once the stream is ensured (or could not be, within 10 s). Each
// connection ensures the stream with this package's configuration.
//
// onChange, when set, is called with the initial state and with every
// change: on (streaming works) or off, and why. It is called with the
// Broker's lock held: it must not call the Broker (a log line is what it is
// for). Start fails only for a URL or option nats.go refuses.
func Start(url, name string, onChange func(on bool, why error)) (*Broker, error) {
	if url == "" {
		return nil, errors.New("broker: no URL (" + EnvURL + " is empty)")
	}
	b := &Broker{url: Redact(url), onChange: onChange, trigger: make(chan struct{}, 1),
		first: make(chan struct{}), upCh: make(chan struct{})}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	poke := func(*nats.Conn) {
		select {
		case b.trigger <- struct{}{}:
		default: // an ensure is already due
		}
	}
	down := func(_ *nats.Conn, err error) {
		if err == nil {
			err = nats.ErrDisconnected
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		b.setLocked(false, err, false)
	}
	nc, err := nats.Connect(url, nats.Name(name),
		nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(reconnectWait),
		// No publish waits for a reconnect: while the broker is away a
		// publish fails at once, and a turn goes on unstreamed.
		nats.ReconnectBufSize(-1),
		nats.PingInterval(pingInterval),
		nats.ConnectHandler(poke), nats.ReconnectHandler(poke),
		nats.DisconnectErrHandler(down), nats.ReconnectErrHandler(down))
	if err != nil {
		b.cancel()
		return nil, fmt.Errorf("broker: %s: %w", b.url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		b.cancel()
		nc.Close()
		return nil, fmt.Errorf("broker: %w", err)
	}
	b.nc, b.js = nc, js
	go b.keep()
	if nc.IsConnected() {
		<-b.first
	} else {
		b.mu.Lock()
		if b.reported == 0 { // the first failed try's error may be in already
			b.setLocked(false, nats.ErrNoServers, false)
		}
		b.mu.Unlock()
	}
	return b, nil
}

// Connect is Start for a caller that needs the broker now: it waits until
// streaming is on, and fails (closing the connection) when ctx ends first.
func Connect(ctx context.Context, url, name string) (*Broker, error) {
	b, err := Start(url, name, nil)
	if err != nil {
		return nil, err
	}
	for {
		b.mu.Lock()
		up, ch := b.up, b.upCh
		b.mu.Unlock()
		if up {
			return b, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			why := b.Err()
			b.Close()
			if why == nil {
				why = ctx.Err()
			}
			return nil, fmt.Errorf("broker: connect: %w (%v)", why, ctx.Err())
		}
	}
}

// keep ensures the stream after each (re)connect.
func (b *Broker) keep() {
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-b.trigger:
		}
		b.ensure()
	}
}

func (b *Broker) ensure() {
	defer b.firstOnce.Do(func() { close(b.first) })
	for b.nc.IsConnected() {
		ctx, cancel := context.WithTimeout(b.ctx, ensureTimeout)
		s, err := ensureStream(ctx, b.js)
		cancel()
		b.mu.Lock()
		if err == nil {
			if b.nc.IsConnected() { // else the disconnect is (or will be) reported
				b.runs.Store(&s)
				b.setLocked(true, nil, false)
			}
			b.mu.Unlock()
			return
		}
		b.setLocked(false, err, b.nc.IsConnected())
		b.mu.Unlock()
		b.firstOnce.Do(func() { close(b.first) }) // Start returns, streaming off
		timer := time.NewTimer(ensureRetry)
		select {
		case <-b.ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		case <-b.trigger: // reconnected meanwhile
			timer.Stop()
		}
	}
}

// setLocked records the state and reports a change. The caller holds mu.
func (b *Broker) setLocked(up bool, why error, connected bool) {
	if b.isClosed {
		return
	}
	b.up, b.why, b.connUp = up, why, connected
	state := reportedOff
	if up {
		state = reportedOn
		if !b.upClosed {
			close(b.upCh)
			b.upClosed = true
		}
		if b.upCtx == nil {
			b.upCtx, b.upCancel = context.WithCancel(b.ctx)
		}
	} else {
		if b.upClosed {
			b.upCh, b.upClosed = make(chan struct{}), false
		}
		if b.upCancel != nil {
			b.upCancel()
			b.upCtx, b.upCancel = nil, nil
		}
	}
	if state == b.reported {
		return
	}
	b.reported = state
	if b.onChange != nil {
		b.onChange(up, b.errLocked())
	}
}

// Err is nil while streaming is on: connected, with the stream ensured.
// Otherwise it says why streaming is off; it matches ErrUnavailable.
func (b *Broker) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.errLocked()
}

func (b *Broker) errLocked() error {
	if b.isClosed {
		return &unavailable{msg: "the connection to the broker at " + b.url + " is closed", cause: nats.ErrConnectionClosed}
	}
	if b.up && b.nc != nil && b.nc.IsConnected() {
		return nil
	}
	why := b.why
	if why == nil {
		why = nats.ErrDisconnected
	}
	if b.connUp {
		return &unavailable{msg: "the broker at " + b.url + " is connected but its stream " + StreamName + " is not ready", cause: why}
	}
	return &unavailable{msg: "the broker at " + b.url + " is unreachable", cause: why}
}

// Up reports whether streaming is on (Err is nil).
func (b *Broker) Up() bool { return b.Err() == nil }

// URL is the broker's URL, its password hidden.
func (b *Broker) URL() string { return b.url }

// whileUp is ctx, also canceled when streaming goes off; it fails at once
// when streaming is off.
func (b *Broker) whileUp(ctx context.Context) (context.Context, context.CancelFunc, error) {
	b.mu.Lock()
	err, up := b.errLocked(), b.upCtx
	b.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(up, cancel)
	return ctx, func() { stop(); cancel() }, nil
}

// Redact is a broker URL fit for a log or an error: its password hidden.
func Redact(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "(a broker URL that does not parse)"
	}
	return u.Redacted()
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

// Close closes the connection and stops reconnecting; writers and
// followers on it stop.
func (b *Broker) Close() {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.isClosed = true
		b.mu.Unlock()
		b.cancel()
		b.nc.Close()
	})
}
