package activities

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/mount"
)

func TestBackoffDoublesToAMinuteAndHonoursRetryAfter(t *testing.T) {
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i, w := range want {
		require.Equal(t, w*time.Second, backoff(int32(i+1), 0), "after attempt %d", i+1)
	}
	require.Equal(t, 60*time.Second, backoff(1000, 0))
	require.Equal(t, 90*time.Second, backoff(1, 90*time.Second), "Retry-After wins")
	require.Equal(t, 5*time.Minute, backoff(3, time.Hour), "Retry-After is honoured up to five minutes")
}

func TestClipKeepsRunes(t *testing.T) {
	require.Equal(t, "abc", clip("abc", 5))
	require.Equal(t, "ab…", clip("abcdef", 2))
	require.Equal(t, "a…", clip("aé", 2), "never cuts a rune in half")
}

func TestWaitOutPassesFinalErrorsAndMakesRefusalsFinal(t *testing.T) {
	a := &Activities{}
	ctx := context.Background()
	final := temporal.NewNonRetryableApplicationError("bad request", contract.ErrModel, nil)
	require.Same(t, final, a.waitOut(ctx, Retry{Timeout: "1h"}, final), "a final error passes as it is")
	require.NoError(t, a.waitOut(ctx, Retry{Timeout: "1h"}, nil))

	var ae *temporal.ApplicationError
	err := a.waitOut(ctx, Retry{Timeout: "1h"}, &contract.Error{Type: mount.ErrFileChanged, Message: "task://a.png changed"})
	require.True(t, errors.As(err, &ae))
	require.True(t, ae.NonRetryable(), "a typed refusal is never retried")
	require.Equal(t, mount.ErrFileChanged, ae.Type())

	transient := temporal.NewApplicationError("HTTP 503", contract.ErrModelUnavailable)
	require.Same(t, transient, a.waitOut(ctx, Retry{}, transient), "older rules: the retry policy counts attempts")
}

// retryDelay is the NextRetryDelay of an error that retries, failing the
// test for any other error.
func retryDelay(t *testing.T, err error) time.Duration {
	t.Helper()
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae), "%v", err)
	require.False(t, ae.NonRetryable(), "%v", err)
	require.Positive(t, ae.NextRetryDelay())
	return ae.NextRetryDelay()
}

func TestJitteredDelaysStayWithinTheirBoundsAndDiffer(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for attempt := int32(1); attempt <= 12; attempt++ {
		ceiling := backoff(attempt, 0)
		seen := map[time.Duration]bool{}
		for range 200 {
			d := jittered(attempt, 0, r.Float64())
			require.GreaterOrEqual(t, d, minBackoff, "after attempt %d", attempt)
			require.LessOrEqual(t, d, ceiling, "after attempt %d", attempt)
			seen[d] = true
		}
		require.Greater(t, len(seen), 150, "after attempt %d the delays are spread, not one value", attempt)
	}
	require.Equal(t, minBackoff, jittered(1, 0, 0), "never at once")
	require.Equal(t, minBackoff+(maxBackoff-minBackoff)/2, jittered(20, 0, 0.5), "full jitter up to the minute")
	for _, ra := range []time.Duration{time.Second, 90 * time.Second, time.Hour} {
		floor := min(ra, maxRetryAfter)
		seen := map[time.Duration]bool{}
		for range 100 {
			d := jittered(3, ra, r.Float64())
			require.GreaterOrEqual(t, d, floor, "Retry-After %s is a minimum", ra)
			require.LessOrEqual(t, d, floor+floor/4, "Retry-After %s plus at most a quarter", ra)
			seen[d] = true
		}
		require.Greater(t, len(seen), 50, "Retry-After %s: spread", ra)
	}

	// Through failed: 50 calls that fail together come back apart.
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newOutageState(func() time.Time { return now }, rand.New(rand.NewPCG(3, 4)).Float64)
	for attempt := int32(1); attempt <= 10; attempt++ {
		seen := map[time.Duration]bool{}
		for i := range 50 {
			err, _ := s.failed(attemptInfo{task: "ns/t", run: "r", call: fmt.Sprintf("check:%d", i), attempt: attempt, scheduled: now, attemptTimeout: time.Minute},
				failure{typ: contract.ErrModelUnavailable, msg: "HTTP 503"}, 24*time.Hour)
			d := retryDelay(t, err)
			require.GreaterOrEqual(t, d, minBackoff)
			require.LessOrEqual(t, d, backoff(attempt, 0))
			seen[d] = true
		}
		require.Greater(t, len(seen), 40, "attempt %d: 50 calls pick different delays", attempt)
	}
	// The last attempt still runs at the limit.
	err, _ := s.failed(attemptInfo{task: "ns/t", run: "r", call: "model:t1:r0", attempt: 30, scheduled: now.Add(-time.Hour + 10*time.Second)},
		failure{typ: contract.ErrModelUnavailable, msg: "HTTP 503"}, time.Hour)
	require.LessOrEqual(t, retryDelay(t, err), 10*time.Second)
}

// dayLongOutage simulates a day during which every attempt of n waiting
// calls of one task fails (kind(i) is call i's failure type), on a fake
// clock, and returns the reports sent and the attempts made.
type simReport struct {
	RetryReport
	failedAt time.Time
	delay    time.Duration
}

func dayLongOutage(t *testing.T, n int, kind func(i int) string, seed uint64) (reports []simReport, attempts []int32, start time.Time) {
	t.Helper()
	start = time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC)
	clock := start
	s := newOutageState(func() time.Time { return clock }, rand.New(rand.NewPCG(seed, 7)).Float64)
	const attemptTakes = 200 * time.Millisecond
	type call struct {
		name      string
		attempt   int32
		scheduled time.Time
		failsAt   time.Time
		first     time.Time
	}
	calls := make([]*call, n)
	for i := range calls {
		sched := start.Add(time.Duration(i) * 20 * time.Millisecond) // all within the first second
		calls[i] = &call{name: fmt.Sprintf("check:%d", i+1), attempt: 1, scheduled: sched, failsAt: sched.Add(attemptTakes)}
	}
	end := start.Add(24 * time.Hour)
	for {
		c, ci := calls[0], 0
		for i, o := range calls {
			if o.failsAt.Before(c.failsAt) {
				c, ci = o, i
			}
		}
		if c.failsAt.After(end) {
			break
		}
		clock = c.failsAt
		if c.attempt == 1 {
			c.first = clock
		}
		err, rep := s.failed(attemptInfo{task: "default/outage-task", run: "run-1", call: c.name, attempt: c.attempt,
			scheduled: c.scheduled, attemptTimeout: 30 * time.Minute},
			failure{typ: kind(ci), msg: "unavailable"}, 25*time.Hour)
		d := retryDelay(t, err)
		if rep != nil {
			require.Equal(t, c.name, rep.Call)
			require.Equal(t, kind(ci), rep.Type)
			require.Equal(t, int(c.attempt), rep.Attempts, "attempts: the call's own")
			require.Equal(t, contract.FormatTime(clock.Add(d)), rep.NextAt, "next_at: when its next attempt starts")
			require.Equal(t, contract.FormatTime(c.first), rep.At, "since: when the call's first attempt failed")
			reports = append(reports, simReport{RetryReport: *rep, failedAt: clock, delay: d})
		}
		attempts = append(attempts, c.attempt)
		c.attempt++
		c.failsAt = clock.Add(d + attemptTakes)
	}
	return reports, attempts, start
}

// What the old rule (every attempt among the first ten, then every fifth)
// would have reported for the same attempts.
func reportsOnceEveryFifth(attempts []int32) int {
	n := 0
	for _, a := range attempts {
		if a <= 10 || a%5 == 0 {
			n++
		}
	}
	return n
}

// A day-long outage costs a task at most maxDayReports reports (contract.md,
// Outages), whatever the number of calls that wait: 29 of one kind.
const maxDayReports = 30

func TestADayLongOutageCostsATaskAFewReports(t *testing.T) {
	model := func(int) string { return contract.ErrModelUnavailable }
	for _, n := range []int{1, 50} {
		t.Run(fmt.Sprintf("%d calls", n), func(t *testing.T) {
			reports, attempts, start := dayLongOutage(t, n, model, uint64(n))
			t.Logf("%d calls: %d attempts, %d reports (one per attempt: %d; first ten then every fifth: %d)",
				n, len(attempts), len(reports), len(attempts), reportsOnceEveryFifth(attempts))
			require.Greater(t, len(attempts), 1000*n, "the calls kept retrying all day")
			if n == 50 {
				require.Greater(t, reportsOnceEveryFifth(attempts), 10_000, "unrationed, this outage would use up the run's signals")
			}

			require.NotEmpty(t, reports)
			first := reports[0]
			require.Equal(t, start.Add(200*time.Millisecond), first.failedAt, "the first failure is reported at once")
			require.Equal(t, 1, first.Attempts)
			require.LessOrEqual(t, len(reports), maxDayReports-1, "one kind of failure: at most 29 reports")
			require.GreaterOrEqual(t, len(reports), 25, "an hourly report at least, all day")

			// status.retrying stays fresh: a report at least every hour
			// (plus the attempt that follows the due time), growing
			// from a minute.
			for i := 1; i < len(reports); i++ {
				gap := reports[i].failedAt.Sub(reports[i-1].failedAt)
				require.GreaterOrEqual(t, gap, min(firstReportGap<<(i-1), maxReportGap), "report %d", i)
				require.LessOrEqual(t, gap, min(firstReportGap<<(i-1), maxReportGap)+maxBackoff+time.Second, "report %d", i)
			}
			require.Less(t, start.Add(24*time.Hour).Sub(reports[len(reports)-1].failedAt), maxReportGap+maxBackoff+time.Second)
		})
	}
	t.Run("model and storage", func(t *testing.T) {
		mixed := func(i int) string {
			if i%2 == 0 {
				return contract.ErrModelUnavailable
			}
			return contract.ErrInternal
		}
		reports, attempts, _ := dayLongOutage(t, 50, mixed, 99)
		t.Logf("50 calls, two kinds: %d attempts, %d reports", len(attempts), len(reports))
		require.LessOrEqual(t, len(reports), maxDayReports)
		require.Equal(t, contract.ErrModelUnavailable, reports[0].Type)
		require.Equal(t, contract.ErrInternal, reports[1].Type, "a new kind of failure is reported at once")
		require.Less(t, reports[1].failedAt.Sub(reports[0].failedAt), time.Second)
	})
}

func TestOutageReportsFollowTheTasksCalls(t *testing.T) {
	now := time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC)
	s := newOutageState(func() time.Time { return now }, rand.New(rand.NewPCG(5, 6)).Float64)
	fail := func(task, call string, attempt int32, typ string) *RetryReport {
		t.Helper()
		err, rep := s.failed(attemptInfo{task: task, run: "r1", call: call, attempt: attempt, scheduled: now.Add(-time.Minute), attemptTimeout: 10 * time.Minute},
			failure{typ: typ, msg: "unavailable"}, 24*time.Hour)
		retryDelay(t, err)
		return rep
	}
	m := contract.ErrModelUnavailable

	require.NotNil(t, fail("ns/a", "model:t1:r0", 1, m), "the first failure is reported")
	require.Nil(t, fail("ns/a", "model:t1:r0", 2, m))
	require.Nil(t, fail("ns/a", "check:1", 1, m), "another call of the task shares its budget")
	require.NotNil(t, fail("ns/b", "model:t1:r0", 1, m), "another task has its own")
	began := now
	rep := fail("ns/a", "check:1", 2, contract.ErrInternal)
	require.NotNil(t, rep, "a new kind of failure is reported")
	require.Equal(t, 2, rep.Attempts)
	require.Equal(t, contract.FormatTime(began), rep.At, "since: when the call's first attempt failed")
	require.Nil(t, fail("ns/a", "check:1", 3, contract.ErrInternal))
	require.Nil(t, fail("ns/a", "check:2", 7, contract.ErrInternal), "first seen here at its 7th attempt")
	require.Nil(t, fail("ns/a", "model:t1:r0", 3, m), "a kind already reported waits its turn")
	// Each report doubles the wait for the next: a minute after the first,
	// two after the second, four after the third.
	now = now.Add(2*firstReportGap - time.Second)
	require.Nil(t, fail("ns/a", "model:t1:r0", 4, m))
	now = now.Add(time.Second)
	require.NotNil(t, fail("ns/a", "model:t1:r0", 5, m), "two minutes after the second report")
	now = now.Add(4*firstReportGap - time.Second)
	require.Nil(t, fail("ns/a", "model:t1:r0", 6, m), "four minutes after the third")

	// The reported call ends while check:1 still waits: the task shows
	// nothing, so check:1's next failure is reported.
	s.ended("ns/a", "r1/model:t1:r0")
	rep = fail("ns/a", "check:2", 8, contract.ErrInternal)
	require.NotNil(t, rep)
	require.Equal(t, contract.FormatTime(began.Add(-time.Minute)), rep.At, "since: its first attempts ran elsewhere, from when it was scheduled")
	require.Nil(t, fail("ns/a", "check:1", 4, contract.ErrInternal))
	// A report that did not arrive is made at the next failure.
	s.unreported("ns/a", "r1/check:2")
	require.NotNil(t, fail("ns/a", "check:1", 5, contract.ErrInternal))
	require.Nil(t, fail("ns/a", "check:2", 9, contract.ErrInternal))
	// Every call ended: the outage is over; the next failure begins another.
	s.ended("ns/a", "r1/check:1")
	require.Contains(t, s.tasks, "ns/a", "check:2 still waits")
	s.ended("ns/a", "r1/check:2")
	require.NotContains(t, s.tasks, "ns/a")
	require.NotNil(t, fail("ns/a", "model:t2:r0", 1, m), "a new outage's first failure is reported")
	require.Nil(t, fail("ns/a", "model:t2:r0", 2, m))

	// A call that does not come back (its attempts run on another worker)
	// is forgotten after its delay and attempt timeout, and the outage ends.
	now = now.Add(maxBackoff + 10*time.Minute + forgetSlack + time.Second)
	require.NotNil(t, fail("ns/a", "check:2", 1, m), "forgotten: the task's next failure begins a new outage")
	require.NotContains(t, s.tasks["ns/a"].calls, "r1/model:t2:r0")

	// Past modelRetryTimeout the failure is final and the call ends.
	err, rep := s.failed(attemptInfo{task: "ns/a", run: "r1", call: "check:2", attempt: 9, scheduled: now.Add(-2 * time.Hour)},
		failure{typ: contract.ErrInternal, msg: "storage unavailable"}, time.Hour)
	require.Nil(t, rep)
	var ae *temporal.ApplicationError
	require.True(t, errors.As(err, &ae))
	require.True(t, ae.NonRetryable())
	require.Equal(t, contract.ErrInternal, ae.Type())
	require.Contains(t, ae.Message(), "storage unavailable (still failing after 2h0m0s and 9 attempts")
	require.NotContains(t, s.tasks, "ns/a")
}

func TestConcurrentFailuresOfOneTaskShareItsReports(t *testing.T) {
	now := time.Date(2025, 3, 1, 8, 0, 0, 0, time.UTC)
	s := newOutageState(func() time.Time { return now }, rand.New(rand.NewPCG(8, 9)).Float64)
	var reported atomic.Int32
	var wg sync.WaitGroup
	for i := range 50 {
		for _, task := range []string{"ns/a", "ns/b"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err, rep := s.failed(attemptInfo{task: task, run: "r", call: fmt.Sprintf("check:%d", i), attempt: 1, scheduled: now, attemptTimeout: time.Minute},
					failure{typ: contract.ErrInternal, msg: "unavailable"}, time.Hour)
				if err != nil && rep != nil {
					reported.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	require.Equal(t, int32(2), reported.Load(), "50 calls failing at once: one report per task")
	require.Len(t, s.tasks["ns/a"].calls, 50)
}
