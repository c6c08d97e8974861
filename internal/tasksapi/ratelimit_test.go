package tasksapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/agenttask/agenttask/internal/catalog"
)

// With a limit of 60 a minute, a key's 61st call within the minute is
// refused 429 rate_limited with Retry-After; another key is not; no limit
// (0) refuses nothing.
func TestRateLimitThroughTheAPI(t *testing.T) {
	keys, err := ParseKeys("a=view,b=view", "")
	if err != nil {
		t.Fatal(err)
	}
	get := func(h http.Handler, key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/v1/models", nil)
		r.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	h, _ := New(Config{Keys: keys, Catalog: catalog.Builtin(), RateLimit: 60})
	start := time.Now()
	for i := 1; i <= 60; i++ {
		if w := get(h, "a"); w.Code != http.StatusOK {
			t.Fatalf("call %d: %d %s", i, w.Code, w.Body)
		}
	}
	w := get(h, "a")
	if time.Since(start) > 50*time.Second {
		t.Fatalf("60 calls took %s: the bucket refilled meanwhile, the test proves nothing", time.Since(start))
	}
	var p Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("61st: %d %s", w.Code, w.Body)
	}
	retry, err := strconv.Atoi(w.Header().Get("Retry-After"))
	if w.Code != http.StatusTooManyRequests || p.Code != CodeRateLimited || p.Status != 429 || err != nil || retry < 1 || retry > 60 ||
		w.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("61st call: %d Retry-After %q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	// a refused call takes no token: after one token's worth (1 s) a call is free
	if w := get(h, "b"); w.Code != http.StatusOK {
		t.Fatalf("another key: %d %s", w.Code, w.Body)
	}
	time.Sleep(time.Duration(retry) * time.Second)
	if w := get(h, "a"); w.Code != http.StatusOK {
		t.Fatalf("after Retry-After: %d %s", w.Code, w.Body)
	}

	off, _ := New(Config{Keys: keys, Catalog: catalog.Builtin()})
	for i := 1; i <= 200; i++ {
		if w := get(off, "a"); w.Code != http.StatusOK {
			t.Fatalf("no limit, call %d: %d", i, w.Code)
		}
	}
}

func TestParseRateLimit(t *testing.T) {
	for v, want := range map[string]int{"": DefaultRateLimit, "0": 0, "60": 60} {
		if n, err := parseRateLimit(v); err != nil || n != want {
			t.Fatalf("%q: %d %v", v, n, err)
		}
	}
	for _, v := range []string{"-1", "ten", "1.5"} {
		if _, err := parseRateLimit(v); err == nil {
			t.Fatalf("%q accepted", v)
		}
	}
}

// The API keeps hashes of its keys, never the keys.
func TestKeysAreHeldAsHashes(t *testing.T) {
	keys, err := ParseKeys("sekrit-call-key=call+view,sekrit-decode=decode", "sekrit-dev")
	if err != nil {
		t.Fatal(err)
	}
	for h, perms := range keys {
		for _, k := range []string{"sekrit-call-key", "sekrit-decode", "sekrit-dev"} {
			if string(h[:]) == k {
				t.Fatalf("key %q kept as it is", k)
			}
		}
		_ = perms
	}
	if _, perms, ok := keys.find("sekrit-decode"); !ok || !perms[PermDecode] || perms[PermView] {
		t.Fatalf("decode key: %v %v", perms, ok)
	}
	if _, perms, ok := keys.find("sekrit-dev"); !ok || perms[PermDecode] || !perms[PermDevelop] {
		t.Fatalf("a developer key does not decode: %v", perms)
	}
	if _, _, ok := keys.find("sekrit-dev "); ok {
		t.Fatal("a near key matched")
	}
	if h, _, _ := keys.find("sekrit-dev"); h.ID() != KeyID("sekrit-dev") || len(h.ID()) != 26 {
		t.Fatalf("ID %q", h.ID())
	}
	if _, err := ParseKeys("k=view+develop", ""); err == nil {
		t.Fatal("develop given to an API key")
	}
}
