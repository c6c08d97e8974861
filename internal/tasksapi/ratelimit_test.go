package tasksapi

import (
	"crypto/sha256"
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
	if w := get(h, "b"); w.Code != http.StatusOK {
		t.Fatalf("another key: %d %s", w.Code, w.Body)
	}

	off, _ := New(Config{Keys: keys, Catalog: catalog.Builtin()})
	for i := 1; i <= 200; i++ {
		if w := get(off, "a"); w.Code != http.StatusOK {
			t.Fatalf("no limit, call %d: %d", i, w.Code)
		}
	}
}

// The limit holds over every minute: calls at one a second, 60 of them,
// leave the 61st refused until the first leaves the minute, and Retry-After
// says when; a refused call counts nothing; however calls come, no 60 s
// span holds more than the limit's accepted calls.
func TestRateLimitHoldsOverEveryMinute(t *testing.T) {
	l := &rateLimits{perMinute: 60, windows: map[KeyHash]*callWindow{{1}: {}}}
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for i := range 60 {
		if p, _ := l.take(KeyHash{1}, t0.Add(time.Duration(i)*time.Second)); p != nil {
			t.Fatalf("call %d refused: %s", i+1, p.Detail)
		}
	}
	p, retry := l.take(KeyHash{1}, t0.Add(59500*time.Millisecond))
	if p == nil || p.Code != CodeRateLimited || retry != "1" {
		t.Fatalf("61st call at 59.5 s: %v %q", p, retry)
	}
	if p, _ := l.take(KeyHash{1}, t0.Add(59999*time.Millisecond)); p == nil {
		t.Fatal("61st call 1 ms before the first left the minute was accepted")
	}
	if p, _ := l.take(KeyHash{1}, t0.Add(time.Minute)); p != nil {
		t.Fatalf("a call once the first left the minute: %s", p.Detail)
	}
	if p, retry := l.take(KeyHash{1}, t0.Add(time.Minute)); p == nil || retry != "1" {
		t.Fatalf("the next at once: %v %q (the second call leaves at 61 s)", p, retry)
	}
	if p, _ := l.take(KeyHash{2}, t0); p != nil {
		t.Fatal("an unknown key is limited here (it is refused before)")
	}

	// Bursts and pauses: every accepted call's minute holds at most 60.
	w := &callWindow{}
	var accepted []int64
	at := int64(0)
	for i := range 5000 {
		at += int64((i*7919)%1700) * int64(time.Millisecond)
		if w.take(at, 60) == 0 {
			accepted = append(accepted, at)
		}
	}
	for i := 60; i < len(accepted); i++ {
		if accepted[i]-accepted[i-60] < int64(time.Minute) {
			t.Fatalf("61 calls accepted within %s", time.Duration(accepted[i]-accepted[i-60]))
		}
	}
	if len(accepted) < 1000 {
		t.Fatalf("only %d of 5000 calls accepted", len(accepted))
	}
}

func TestParseRateLimit(t *testing.T) {
	for v, want := range map[string]int{"": DefaultRateLimit, "0": 0, "60": 60} {
		if n, err := parseRateLimit(v); err != nil || n != want {
			t.Fatalf("%q: %d %v", v, n, err)
		}
	}
	for _, v := range []string{"-1", "ten", "1.5", "100001"} {
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
	// Keys is a map from SHA-256 sums: each key is there by its sum, and
	// nothing else is.
	if len(keys) != 3 {
		t.Fatalf("%d keys held", len(keys))
	}
	for _, k := range []string{"sekrit-call-key", "sekrit-decode", "sekrit-dev"} {
		if _, ok := keys[KeyHash(sha256.Sum256([]byte(k)))]; !ok {
			t.Fatalf("key %q is not held by its SHA-256", k)
		}
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
