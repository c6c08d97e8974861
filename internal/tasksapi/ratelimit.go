package tasksapi

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"golang.org/x/time/rate"
)

// EnvRateLimit is how many calls a key may make per minute
// (DefaultRateLimit; 0 for no limit). Each key has a token bucket of that
// many tokens, refilled at that rate: a key may burst a minute's calls at
// once, then call at the rate. The API and the codec server count apart.
const EnvRateLimit = "AGENT_API_RATE_LIMIT"

// DefaultRateLimit is ten calls a second on average per key.
const DefaultRateLimit = 600

// rateLimits holds a bucket per known key. The map is built once from the
// configured keys and never grows: a request is limited only after its key
// is known, so unknown keys cannot fill it.
type rateLimits struct {
	perMinute int
	buckets   map[KeyHash]*rate.Limiter
}

// newRateLimits gives every key perMinute calls a minute; nil (no limit)
// when perMinute is 0.
func newRateLimits(keys Keys, perMinute int) *rateLimits {
	if perMinute <= 0 {
		return nil
	}
	l := &rateLimits{perMinute: perMinute, buckets: make(map[KeyHash]*rate.Limiter, len(keys))}
	for h := range keys {
		l.buckets[h] = rate.NewLimiter(rate.Limit(float64(perMinute)/60), perMinute)
	}
	return l
}

// take spends one call of the key's bucket. When it is empty it spends
// nothing and reports the whole seconds until a call is free again (what
// Retry-After says), and the refusal to send.
func (l *rateLimits) take(h KeyHash, now time.Time) (*Problem, string) {
	if l == nil {
		return nil, ""
	}
	b := l.buckets[h]
	if b == nil {
		return nil, "" // not a configured key: refused before this
	}
	r := b.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	if wait == 0 {
		return nil, ""
	}
	r.CancelAt(now) // a refused call takes no token
	secs := int(math.Ceil(wait.Seconds()))
	return problem(CodeRateLimited, fmt.Sprintf("this key made more than %d calls in a minute (%s); retry in %d s", l.perMinute, EnvRateLimit, secs), ""),
		strconv.Itoa(secs)
}

// parseRateLimit reads AGENT_API_RATE_LIMIT ("" gives the default).
func parseRateLimit(v string) (int, error) {
	if v == "" {
		return DefaultRateLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: %q must be calls per minute per key, a whole number (0 for no limit), such as %d", EnvRateLimit, v, DefaultRateLimit)
	}
	return n, nil
}
