package workflows

import (
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
)

// What the Web UI calls things (rules.namedTimers): a timer shows its
// summary instead of a bare number ("idle timeout 24h", "approval timeout
// 5m · t1.c1"); older rules set none, so their histories replay the same.

// newTimer starts a timer with summary (under rules.namedTimers).
func (r rules) newTimer(ctx workflow.Context, d time.Duration, summary string) workflow.Future {
	if !r.namedTimers {
		return workflow.NewTimer(ctx, d)
	}
	return workflow.NewTimerWithOptions(ctx, d, workflow.TimerOptions{Summary: summary})
}

// shortDuration writes d as a person says it: 24h, 5m, 1h30m, 45s.
func shortDuration(d time.Duration) string {
	s := d.Round(time.Second).String()
	for _, zero := range []string{"m0s", "h0m"} {
		if strings.HasSuffix(s, zero) {
			s = strings.TrimSuffix(s, zero[1:])
		}
	}
	return s
}

// timeout is how long the approval waits for a decision (0: no deadline).
func (r *approvalRecord) timeout() time.Duration {
	if r.Deadline == "" {
		return 0
	}
	end, err1 := contract.ParseTime(r.Deadline)
	start, err2 := contract.ParseTime(r.RequestedAt)
	if err1 != nil || err2 != nil {
		return 0
	}
	return end.Sub(start)
}
