package llm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// headerLog records the headers of every request a test server received.
type headerLog struct {
	mu   sync.Mutex
	seen []http.Header
}

func (l *headerLog) add(h http.Header) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, h.Clone())
}

func (l *headerLog) all() []http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]http.Header(nil), l.seen...)
}

// carries reports whether any header value holds s.
func carries(h http.Header, s string) bool {
	for _, vs := range h {
		for _, v := range vs {
			if strings.Contains(v, s) {
				return true
			}
		}
	}
	return false
}

// A provider key travels in a header: Authorization for the OpenAI
// protocol, x-api-key for Anthropic's, x-goog-api-key for Gemini's.
// net/http drops only Authorization (and cookies) on a redirect to another
// host, so a provider endpoint answering 307 to another host would hand
// that host the key (Gemini's did; the Anthropic SDK drops its own). Two real servers: the configured one redirects every
// request to the other (another host name and port), which must see the
// request without the key. A redirect within the configured host keeps it.
func TestProviderKeysDoNotFollowARedirectToAnotherHost(t *testing.T) {
	const key = "sk-secret-provider-key-1234"
	for _, protocol := range []string{ProtocolOpenAI, ProtocolAnthropic, ProtocolGoogle} {
		t.Run(protocol, func(t *testing.T) {
			var other headerLog
			elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				other.add(r.Header)
				http.Error(w, `{"error":{"message":"no"}}`, http.StatusBadRequest)
			}))
			defer elsewhere.Close()
			// The same server under another host name: localhost, not 127.0.0.1.
			u, err := url.Parse(elsewhere.URL)
			if err != nil {
				t.Fatal(err)
			}
			otherHost := "http://localhost:" + u.Port()

			var home headerLog
			configured := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				home.add(r.Header)
				http.Redirect(w, r, otherHost+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			}))
			defer configured.Close()

			ep := Endpoint{BaseURL: configured.URL, APIKey: key}
			if protocol != ProtocolOpenAI {
				ep.Protocol = protocol
			}
			r := NewRouter(RouterOptions{Endpoints: map[string]Endpoint{"p": ep}})
			_, _ = r.Complete(context.Background(), hello("p/m")) // the other host refuses: only what it saw matters

			first := home.all()
			if len(first) == 0 || !carries(first[0], key) {
				t.Fatalf("the configured host did not get the key: %v", first)
			}
			seen := other.all()
			if len(seen) == 0 {
				t.Fatal("the redirect was not followed: the test shows nothing")
			}
			for i, h := range seen {
				if carries(h, key) {
					t.Errorf("request %d to the other host carried the provider key: %v", i, h)
				}
			}
		})
	}
}

// A redirect within the configured host (same scheme, host and port)
// keeps every header: the key reaches the path it was redirected to.
func TestProviderKeysFollowARedirectWithinTheHost(t *testing.T) {
	const key = "sk-secret-provider-key-5678"
	var moved headerLog
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/moved") {
			http.Redirect(w, r, "/moved"+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			return
		}
		moved.add(r.Header)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(completion("ok", "stop")))
	}))
	defer srv.Close()
	r := NewRouter(RouterOptions{Endpoints: map[string]Endpoint{"p": {BaseURL: srv.URL, APIKey: key}}})
	resp, err := r.Complete(context.Background(), hello("p/m"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "ok" {
		t.Fatalf("answer %q", resp.Text)
	}
	seen := moved.all()
	if len(seen) != 1 || seen[0].Get("Authorization") != "Bearer "+key {
		t.Fatalf("the redirected request within the host lost its key: %v", seen)
	}
}

// A caller's own client (RouterOptions.HTTPClient) gets the same rule, and
// keeps its own redirect policy after it.
func TestACallersClientDropsKeysOnARedirectToAnotherHost(t *testing.T) {
	const key = "sk-secret-provider-key-9999"
	var other headerLog
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.add(r.Header)
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer elsewhere.Close()
	u, _ := url.Parse(elsewhere.URL)
	configured := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+u.Port()+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer configured.Close()
	asked := 0
	own := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { asked++; return nil }}
	r := NewRouter(RouterOptions{HTTPClient: own, Endpoints: map[string]Endpoint{"p": {BaseURL: configured.URL, APIKey: key, Protocol: ProtocolGoogle}}})
	_, _ = r.Complete(context.Background(), hello("p/m"))
	seen := other.all()
	if len(seen) == 0 {
		t.Fatal("the redirect was not followed")
	}
	if carries(seen[0], key) {
		t.Errorf("the other host got the key through the caller's client: %v", seen[0])
	}
	if asked == 0 {
		t.Error("the caller's own CheckRedirect was not consulted")
	}
}
