package tasksapi

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"
)

// EnvRateLimit is how many calls a key may make per minute
// (DefaultRateLimit; 0 for no limit). The limit holds over every minute,
// not on average: a key's call is refused while it already made that many
// calls in the 60 s before it. The API and the codec server count apart.
const EnvRateLimit = "AGENT_API_RATE_LIMIT"

// DefaultRateLimit is ten calls a second on average per key.
const DefaultRateLimit = 600

// MaxRateLimit bounds the limit, so a key's window holds at most 781 KiB.
const MaxRateLimit = 100_000

// rateWindow is the span the limit counts calls over.
const rateWindow = time.Minute

// rateLimits holds a window per known key. The map is built once from the
// configured keys and never grows: a request is limited only after its key
// is known, so unknown keys cannot fill it.
type rateLimits struct {
	perMinute int
	windows   map[KeyHash]*callWindow
}

// callWindow is a sliding log of one key's accepted calls: the instants of
// the last perMinute of them, oldest at next (a ring; 8 bytes a call, so
// the default limit holds 4.7 KiB per key). A token bucket would let a key
// make up to twice its limit within one minute (a full bucket, then the
// refill); this never lets it make more than the limit.
type callWindow struct {
	mu   sync.Mutex
	at   []int64 // UnixNano of accepted calls; len grows to perMinute
	next int     // once full, the oldest call's index
}

// newRateLimits gives every key perMinute calls a minute; nil (no limit)
// when perMinute is 0.
func newRateLimits(keys Keys, perMinute int) *rateLimits {
	if perMinute <= 0 {
		return nil
	}
	l := &rateLimits{perMinute: perMinute, windows: make(map[KeyHash]*callWindow, len(keys))}
	for h := range keys {
		l.windows[h] = &callWindow{}
	}
	return l
}

// take counts one call of the key at now. When the key already made
// perMinute calls in the minute before now, it counts nothing and returns
// the refusal to send and the whole seconds until a call is free again
// (what Retry-After says: when the oldest of those calls leaves the
// minute).
func (l *rateLimits) take(h KeyHash, now time.Time) (*Problem, string) {
	if l == nil {
		return nil, ""
	}
	w := l.windows[h]
	if w == nil {
		return nil, "" // not a configured key: refused before this
	}
	wait := w.take(now.UnixNano(), l.perMinute)
	if wait <= 0 {
		return nil, ""
	}
	secs := max(int(math.Ceil(wait.Seconds())), 1)
	return problem(CodeRateLimited, fmt.Sprintf("this key made %d calls within the last minute, its limit (%s); retry in %d s", l.perMinute, EnvRateLimit, secs), ""),
		strconv.Itoa(secs)
}

// take records a call at now and returns 0, or, when limit calls were made
// in the window before now, records nothing and returns how long until the
// oldest of them leaves it.
func (w *callWindow) take(now int64, limit int) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.at) < limit {
		w.at = append(w.at, now)
		return 0
	}
	oldest := w.at[w.next]
	if free := oldest + int64(rateWindow); now < free {
		return time.Duration(free - now)
	}
	w.at[w.next] = now
	w.next = (w.next + 1) % limit
	return 0
}

// parseRateLimit reads AGENT_API_RATE_LIMIT ("" gives the default).
func parseRateLimit(v string) (int, error) {
	if v == "" {
		return DefaultRateLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > MaxRateLimit {
		return 0, fmt.Errorf("%s: %q must be calls per minute per key, a whole number from 0 (no limit) to %d, such as %d", EnvRateLimit, v, MaxRateLimit, DefaultRateLimit)
	}
	return n, nil
}
