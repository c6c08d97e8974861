package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		24 * time.Hour: "24h", 5 * time.Minute: "5m", 90 * time.Minute: "1h30m", 45 * time.Second: "45s",
		time.Hour + time.Second: "1h0m1s", 1500 * time.Millisecond: "2s",
	} {
		require.Equal(t, want, shortDuration(d), "%v", d)
	}
}
