package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What the load measures of its own process and the server's: memory and
// CPU peaks sampled while a side runs, read from the Go runtime and /proc.

// every calls f with the time elapsed every d until the returned func is
// called; that func returns once f has run for the last time.
func every(d time.Duration, f func(time.Duration)) func() {
	stop, done := make(chan struct{}), make(chan struct{})
	t0 := time.Now()
	go func() {
		defer close(done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				f(time.Since(t0))
			}
		}
	}()
	return func() { close(stop); <-done }
}

// sampleMemory records the Go runtime's peaks into s every 100 ms until the
// returned func is called; s is read once that func has returned, when no
// sample is running (every waits for the last one).
func sampleMemory(s *loadSide) func() {
	return every(100*time.Millisecond, func(time.Duration) {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		g := runtime.NumGoroutine()
		s.HeapPeak, s.StackPeak, s.GoroutinePeak = max(s.HeapPeak, m.HeapInuse), max(s.StackPeak, m.StackInuse), max(s.GoroutinePeak, g)
	})
}

// procStatus reads a "kB" field of /proc/<pid>/status, in bytes (0 when
// unreadable, as off Linux).
func procStatus(pid int, field string) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// resetPeakRSS resets VmHWM to the current RSS (Linux: "5" into clear_refs).
func resetPeakRSS(pid int) bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
}

// cpuTime is the user+system CPU time a process has used (Linux; 0 elsewhere).
func cpuTime(pid int) time.Duration {
	if pid == os.Getpid() {
		var ru syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces): utime and
	// stime are fields 14 and 15, in clock ticks (100 a second on Linux).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// readProfile asks the server binary for its profile's settings.
func readProfile(agentdev, profile string) ([]profileSetting, error) {
	out, err := exec.Command(agentdev, "profile", "-json", profile).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("%s profile -json %s: %w", agentdev, profile, err)
	}
	var s []profileSetting
	if err := json.Unmarshal(out, &s); err != nil {
		return nil, fmt.Errorf("%s profile -json %s: %w", agentdev, profile, err)
	}
	return s, nil
}
