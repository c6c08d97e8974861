package mount

import (
	"sync"
	"time"
)

// Heartbeat cadence: a long read or copy reports its progress at least every
// heartbeatBytes bytes and at least every heartbeatEvery, even while a read
// is blocked, so an activity can heartbeat from the callback.
const (
	heartbeatBytes = 8 << 20
	heartbeatEvery = time.Second
)

// progress calls fn with the bytes processed so far. Calls are serialised:
// fn never runs concurrently with itself.
type progress struct {
	fn   func(int64)
	mu   sync.Mutex
	n    int64
	last int64
	stop chan struct{}
	done chan struct{}
}

func startProgress(fn func(int64)) *progress { return newProgress(fn, heartbeatEvery) }

func newProgress(fn func(int64), every time.Duration) *progress {
	p := &progress{fn: fn}
	if fn == nil {
		return p
	}
	p.stop = make(chan struct{})
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.report()
				p.mu.Unlock()
			}
		}
	}()
	return p
}

func (p *progress) add(k int) {
	if p.fn == nil {
		return
	}
	p.mu.Lock()
	p.n += int64(k)
	if p.n-p.last >= heartbeatBytes {
		p.report()
	}
	p.mu.Unlock()
}

func (p *progress) report() {
	p.last = p.n
	p.fn(p.n)
}

// end stops the ticker; no call happens after it returns.
func (p *progress) end() {
	if p.fn == nil {
		return
	}
	close(p.stop)
	<-p.done
}
