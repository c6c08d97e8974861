package llm

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A router on the default client keeps the connections of a burst of
// concurrent calls and reuses them for the next burst: net/http's default
// transport keeps 2 per host, so the second burst of 20 would open 18 new
// connections (for a hosted provider, 18 TLS handshakes).
func TestDefaultClientReusesConnectionsOfConcurrentCalls(t *testing.T) {
	const burst = 20
	var opened atomic.Int64
	var mu sync.Mutex
	inFlight := 0
	all := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Hold each call until the whole burst is in flight, so the burst
		// really needs burst connections at once.
		mu.Lock()
		inFlight++
		if inFlight == burst {
			close(all)
		}
		ch := all
		mu.Unlock()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(completion("ok", "stop")))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	r := NewRouter(RouterOptions{Endpoints: map[string]Endpoint{"p": {BaseURL: srv.URL}}})
	runBurst := func() {
		var wg sync.WaitGroup
		for range burst {
			wg.Go(func() {
				if _, err := r.Complete(context.Background(), hello("p/m")); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	runBurst()
	first := opened.Load()
	if first != burst {
		t.Fatalf("the first burst opened %d connections, want %d (one per call in flight)", first, burst)
	}
	mu.Lock()
	inFlight, all = 0, make(chan struct{})
	mu.Unlock()
	runBurst()
	if again := opened.Load() - first; again != 0 {
		t.Errorf("the second burst of %d calls opened %d new connections, want 0: the idle pool kept fewer than the burst", burst, again)
	}
}
