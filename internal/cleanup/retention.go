package cleanup

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agenttask/agenttask/internal/transcript"
)

// Retention (docs/design.md, Retention): a closed task's objects (its
// transcripts, stash, mount files and streamed events) are removed once it
// has been closed for AGENT_RETENTION, by the RetentionSweep workflow that
// a Temporal Schedule starts on the runtime's task queue (schedule.go,
// sweep.go). This file holds the setting and the expiry decision.

// EnvRetention is how long a closed task's objects are kept.
const EnvRetention = "AGENT_RETENTION"

// RetentionOff is AGENT_RETENTION=off: the queue's schedule is deleted.
const RetentionOff time.Duration = -1

// DefaultRetention applies when AGENT_RETENTION is unset.
const DefaultRetention = 30 * 24 * time.Hour

// MinRetention is the shortest retention accepted (tests use 1m).
const MinRetention = time.Minute

// Bounds of the sweep's interval, a quarter of the retention: a task's
// objects outlive its retention by at most a quarter more (and at most an
// hour).
const (
	MinSweepEvery = 10 * time.Second
	MaxSweepEvery = time.Hour
)

// ParseRetention reads AGENT_RETENTION: a Go duration (90m, 720h) or a
// number of days (30d); unset is DefaultRetention; "0" or "off" turns
// retention off (nothing is ever removed by it). It returns RetentionOff
// for off, never 0: a zero retention is a Config built in code that says
// nothing about it.
func ParseRetention(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	switch strings.ToLower(v) {
	case "":
		return DefaultRetention, nil
	case "0", "off":
		return RetentionOff, nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > 100*365 {
			return 0, fmt.Errorf("%s=%q: want a whole number of days (such as 30d), a Go duration of at least %s (such as 36h), or 0/off to keep everything", EnvRetention, v, MinRetention)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return 0, fmt.Errorf("%s=%q: want a Go duration of at least %s (such as 36h or 90m), days (such as 30d), or 0/off to keep everything", EnvRetention, v, MinRetention)
		}
	}
	if d < MinRetention {
		return 0, fmt.Errorf("%s=%q: at least %s, or 0/off to keep everything", EnvRetention, v, MinRetention)
	}
	return d, nil
}

// SweepEvery is how often the schedule sweeps for a retention: a quarter
// of it, within [MinSweepEvery, MaxSweepEvery].
func SweepEvery(retention time.Duration) time.Duration {
	return min(max(retention/4, MinSweepEvery), MaxSweepEvery)
}

// Execution is what Temporal says of a task's newest execution (its
// latest run, DescribeWorkflowExecution with no run ID).
type Execution struct {
	Known      bool      // Temporal still has it
	Running    bool      // it has not closed
	FirstRunID string    // its chain's first run: the transcript folder it writes
	RunID      string    // its latest run
	CloseTime  time.Time // when it closed (Running false)
}

// Verdict is the sweep's decision about one task folder.
type Verdict string

const (
	// Keep: the task runs, or has not been closed (or left alone) for the
	// retention yet.
	Keep Verdict = "keep"
	// Expire: every object of the task goes (PurgeTaskObjects), with its
	// closed execution when Temporal still has it (DeleteTask).
	Expire Verdict = "expire"
	// Seal: keep, and first write the entries the closed execution holds
	// that its transcript lacks (seal.go).
	Seal Verdict = "seal"
)

// Decide is the expiry decision for the transcripts folders of one task ID
// (newest first, transcript.Store.Describe), given what Temporal says of
// it at now:
//
//   - a running execution keeps every folder of its task ID (a purge
//     removes all of them, an older chain's too: it waits for this one);
//   - a closed execution expires its task when it closed at least retention
//     ago and every older chain's folder was last written that long ago;
//     until then it is sealed once (sealed reports the marker is there);
//   - a task Temporal no longer knows expires when its newest object is at
//     least retention old.
func Decide(now time.Time, retention time.Duration, folders []transcript.Folder, exec Execution, sealed bool) Verdict {
	if retention <= 0 || len(folders) == 0 {
		return Keep
	}
	if exec.Known && exec.Running {
		return Keep
	}
	for _, f := range folders {
		if exec.Known && f.FirstRunID() == exec.FirstRunID {
			continue // dated by its close, below (the seal writes after it)
		}
		if now.Sub(f.Newest) < retention {
			return Keep
		}
	}
	if exec.Known {
		if now.Sub(exec.CloseTime) >= retention {
			return Expire
		}
		if !sealed {
			return Seal
		}
		return Keep
	}
	return Expire
}
