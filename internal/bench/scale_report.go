package main

import (
	"fmt"
	"strings"
	"time"
)

// printScale reports the memory and scale phase (scale.go). Its thresholds
// are that every answer was committed and nothing failed, on both sides of
// both measurements; the figures themselves have none (docs/bench.md turns
// them into a sizing guide).
func (r *report) printScale(p func(string, ...any)) []check {
	x := r.scale
	if x == nil {
		return []check{{"scale: idle memory, every conversation answered", "not measured", false},
			{"scale: two workers, failed turns and workflows == 0", "not measured", false}}
	}
	p("Memory and scale: worker processes of their own (%s), each on a queue of its own, the echo model that keeps nothing,", x.WorkerBin)
	p("   transcripts in a temporary file:// folder, log level warn; their tuning: %s", tuningLabel(x.Tuning, x.BenchSet))
	p("")
	checks := []check{x.printIdleMemory(p), x.printTwoWorkers(p)}
	p("   (memory and scale took %s)", x.Elapsed.Round(time.Second))
	p("")
	return checks
}

// printIdleMemory is the idle-memory table: what an idle conversation
// costs a worker process, sticky cache on and off.
func (x *scaleResult) printIdleMemory(p func(string, ...any)) check {
	if x.IdleOn == nil || x.IdleOff == nil {
		return check{"scale: idle memory, every conversation answered", "not measured", false}
	}
	p("   idle memory: %d conversations on one fresh worker process, each answering one turn (`ask`, 50 at a time),", x.IdleN)
	p("   then idle; the worker's RSS (median of samples 1 s apart) once it polls and has served %d conversations of", idleWarm)
	p("   warm-up (they stay idle, not counted), and after %s of quiet;", idleQuiet)
	p("   peak: VmHWM while they started. Sticky cache off is AGENT_WORKER_STICKY_CACHE=%d, the least the binary takes.", stickyOff)
	p("   | sticky cache         | answered | errors | RSS before | peak     | RSS after | per conversation | start    | worker CPU | server CPU | server RSS before -> after |")
	p("   |----------------------|----------|--------|------------|----------|-----------|------------------|----------|------------|------------|----------------------------|")
	for _, ir := range []*idleRun{x.IdleOn, x.IdleOff} {
		peak := mib(ir.RSSPeak)
		if !ir.PeakOK {
			peak = "n/a"
		}
		p("   | %-20s | %8d | %6d | %10s | %8s | %9s | %12.1f KiB | %8s | %10s | %10s | %12s -> %-11s |",
			fmt.Sprintf("%s (%d)", strings.TrimPrefix(ir.Name, "sticky cache "), ir.StickyCache), ir.Answered, ir.Errors,
			mib(ir.RSSBefore), peak, mib(ir.RSSAfter), ir.perConversation()/1024, ir.Start.Round(10*time.Millisecond),
			ir.CPU.Round(100*time.Millisecond), ir.ServerCPU.Round(100*time.Millisecond), mib(ir.ServerRSSBefore), mib(ir.ServerRSSAfter))
	}
	on, off := x.IdleOn.perConversation(), x.IdleOff.perConversation()
	p("   per 1,000 idle conversations: %.1f MiB with the cache on, %.1f MiB off; worker CPU per conversation started: %.2f ms on, %.2f ms off",
		on*1000/(1<<20), off*1000/(1<<20), cpuPer(x.IdleOn.CPU, x.IdleOn.Answered), cpuPer(x.IdleOff.CPU, x.IdleOff.Answered))
	for _, ir := range []*idleRun{x.IdleOn, x.IdleOff} {
		for _, e := range ir.FirstErrs {
			p("   %s error: %s", ir.Name, e)
		}
	}
	p("")
	ok := x.IdleOn.Errors == 0 && x.IdleOff.Errors == 0 && x.IdleOn.Answered == x.IdleN && x.IdleOff.Answered == x.IdleN
	return check{"scale: idle memory, every conversation answered",
		fmt.Sprintf("%d and %d of %d, %d and %d errors (cache on, off)", x.IdleOn.Answered, x.IdleOff.Answered, x.IdleN, x.IdleOn.Errors, x.IdleOff.Errors), ok}
}

// printTwoWorkers is the two-workers table: the load against one worker
// process, then against two on one queue.
func (x *scaleResult) printTwoWorkers(p func(string, ...any)) check {
	if x.One == nil || x.Two == nil {
		return check{"scale: two workers, failed turns and workflows == 0", "not measured", false}
	}
	p("   two workers: %d conversations × %d turns at once (the load of section 4, `ask` updates), against one worker", x.ConvN, x.Turns)
	p("   process, then against two on one queue (a fresh queue each); worker CPU is the processes' sum during the side")
	p("   | workers | turns  | errors | wall     | turns/s | p50         | p99         | start     | worker RSS: polling -> peak   | worker CPU | server CPU | timed-out tasks |")
	p("   |---------|--------|--------|----------|---------|-------------|-------------|-----------|-------------------------------|------------|------------|-----------------|")
	for _, s := range []*scaleSide{x.One, x.Two} {
		ls := summarizeLatency(s.Latencies)
		var rss []string
		for i := range s.WorkerRSSBefore {
			peak := mib(s.WorkerRSSPeak[i])
			if !s.WorkerPeakOK {
				peak = "n/a"
			}
			rss = append(rss, mib(s.WorkerRSSBefore[i])+" -> "+peak)
		}
		p("   | %7d | %6d | %6d | %8s | %7.1f | %11s | %11s | %9s | %-29s | %10s | %10s | %15s |", s.Workers, len(s.Latencies), s.Errors,
			s.Wall.Round(10*time.Millisecond), s.throughput(), ms(ls.P50), ms(ls.P99), s.Start.Round(10*time.Millisecond),
			strings.Join(rss, ", "), s.WorkerCPU.Round(100*time.Millisecond), s.ServerCPU.Round(100*time.Millisecond),
			fmt.Sprintf("%d of %d", s.TimedOutTasks, s.Sampled))
	}
	one, two := summarizeLatency(x.One.Latencies), summarizeLatency(x.Two.Latencies)
	p("   two / one: throughput %.2f, p50 latency %.2f, p99 latency %.2f", ratioOf(x.Two.throughput(), x.One.throughput()),
		ratioOf(float64(two.P50), float64(one.P50)), ratioOf(float64(two.P99), float64(one.P99)))
	for _, s := range []*scaleSide{x.One, x.Two} {
		for _, e := range s.FirstErrs {
			p("   %d worker(s) error: %s", s.Workers, e)
		}
	}
	p("")
	want := x.ConvN * x.Turns
	return check{"scale: two workers, failed turns and workflows == 0",
		fmt.Sprintf("%d and %d (one, two workers; of %d turns each)", x.One.Errors, x.Two.Errors, want),
		x.One.Errors == 0 && x.Two.Errors == 0 && len(x.One.Latencies) == want && len(x.Two.Latencies) == want}
}

func cpuPer(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(d) / float64(time.Millisecond) / float64(n)
}
