package workerkit

import (
	"strings"
	"testing"
	"time"

	"github.com/agenttask/agenttask/internal/cleanup"
)

// AGENT_RETENTION reaches Config.Retention: the default when unset, RetentionOff for
// off, a corrective error for a bad value.
func TestConfigRetention(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			switch k {
			case EnvTranscriptURL:
				return "mem://"
			case EnvRetention:
				return v
			}
			return ""
		}
	}
	for v, want := range map[string]time.Duration{"": cleanup.DefaultRetention, "off": cleanup.RetentionOff, "7d": 7 * 24 * time.Hour, "90m": 90 * time.Minute} {
		c, err := ConfigFromEnv(env(v))
		if err != nil || c.Retention != want {
			t.Fatalf("%s=%q: %v, %v; want %v", EnvRetention, v, c.Retention, err, want)
		}
	}
	if _, err := ConfigFromEnv(env("soon")); err == nil || !strings.Contains(err.Error(), EnvRetention) {
		t.Fatalf("a bad %s: %v", EnvRetention, err)
	}
}
