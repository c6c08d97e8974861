package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agenttask/agenttask/internal/workerkit"
)

// report prints the results and judges them against the thresholds.
type report struct {
	opts      options
	began     time.Time
	elapsed   time.Duration
	serverBin string
	hist      *historyResult
	over      *overheadResult
	timings   *activityTimings
	stream    *streamResult
	load      *loadResult
	prefix    *prefixResult
	scale     *scaleResult // scale.go
}

// print writes the report; it returns false when a threshold failed.
func (r *report) print(out io.Writer) bool {
	w := bufio.NewWriter(out)
	defer w.Flush()
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }

	r.printHeader(p)
	var checks []check
	checks = append(checks, r.printHistory(p)...)
	checks = append(checks, r.printOverhead(p)...)
	checks = append(checks, r.printStreaming(p)...)
	checks = append(checks, r.printPrefix(p)...) // prefix.go
	checks = append(checks, r.printLoad(p)...)
	checks = append(checks, r.printScale(p)...) // scale_report.go
	return r.printThresholds(p, checks)
}

// printHeader says when, on what machine and against which server.
func (r *report) printHeader(p func(string, ...any)) {
	p("")
	p("AgentTask bench, %s", r.began.Format("2006-01-02 15:04 MST"))
	p("machine: %s/%s, %d CPUs (%s), %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), runtime.Version())
	p("server:  %s server (in-memory SQLite), one process; worker and driver in this process, one client connection", r.serverBin)
	p("")
}

// printThresholds judges every check, last, so one glance at the end of
// the report shows what failed; it returns false when one did.
func (r *report) printThresholds(p func(string, ...any), checks []check) bool {
	ok := true
	p("Thresholds")
	for _, c := range checks {
		verdict := "PASS"
		if !c.ok {
			verdict, ok = "FAIL", false
		}
		p("   %s  %-62s %s", verdict, c.what, c.got)
	}
	p("")
	p("bench took %s", r.elapsed.Round(time.Second))
	return ok
}

// printHistory reports the history measurement (history.go): events and
// bytes per turn early and late in one long conversation.
func (r *report) printHistory(p func(string, ...any)) []check {
	h := r.hist
	if h == nil {
		return []check{{"events per turn", "not measured", false}, {"bytes ratio", "not measured", false}}
	}
	early, late := h.window(earlyWindow[0], earlyWindow[1]), h.window(lateWindow[0], lateWindow[1])
	p("1. History per turn: one conversation of %d turns, ~100-byte inputs, idleTimeout 1h, continueAsNewEvents unset", len(h.Turns))
	if h.CANTurn > 0 {
		p("   %d runs: Temporal suggested continue-as-new and the task continued during turn %d;", h.Runs, h.CANTurn)
	} else {
		p("   %d run(s): the task never continued as new", h.Runs)
	}
	p("   turns %d-%d are in run %s, turns %d-%d in run %s.", early.From, early.To, runList(early.Runs), late.From, late.To, runList(late.Runs))
	p("")
	p("   | turns    | events/turn (min-max) | bytes/turn (proto.Size) | server history_size_bytes/turn |")
	p("   |----------|-----------------------|-------------------------|--------------------------------|")
	for _, ws := range []windowStats{early, late} {
		p("   | %-8s | %5.2f (%d-%d)         | %9.1f               | %9.1f%-21s|", fmt.Sprintf("%d-%d", ws.From, ws.To),
			ws.EventsMean, ws.EventsMin, ws.EventsMax, ws.BytesMean, ws.ServerBytesMean, serverNote(ws))
	}
	ratio := late.BytesMean / early.BytesMean
	p("")
	p("   bytes(%d-%d) / bytes(%d-%d) = %.3f (server's history_size_bytes: %.3f)", late.From, late.To, early.From, early.To,
		ratio, late.ServerBytesMean/early.ServerBytesMean)
	p("")
	h.printByTypeAndRuns(p, early, late)
	return []check{
		{fmt.Sprintf("events per turn == %d in turns %d-%d and %d-%d", wantEventsPerTurn, early.From, early.To, late.From, late.To),
			fmt.Sprintf("%d-%d and %d-%d", early.EventsMin, early.EventsMax, late.EventsMin, late.EventsMax),
			early.EventsMin == wantEventsPerTurn && early.EventsMax == wantEventsPerTurn && late.EventsMin == wantEventsPerTurn && late.EventsMax == wantEventsPerTurn},
		{fmt.Sprintf("bytes per turn, turns %d-%d / turns %d-%d <= %.1f", late.From, late.To, early.From, early.To, maxBytesRatio),
			fmt.Sprintf("%.3f", ratio), ratio <= maxBytesRatio},
	}
}

// printByTypeAndRuns is the history section's detail: where the bytes of
// a turn go by event type, the turn that continued as new, each run's size.
func (h *historyResult) printByTypeAndRuns(p func(string, ...any), early, late windowStats) {
	p("   mean bytes per turn by event type:")
	p("   | event type                          | turns %d-%d | turns %d-%d |", early.From, early.To, late.From, late.To)
	p("   |-------------------------------------|-------------|---------------|")
	for _, typ := range eventTypes(early, late) {
		p("   | %-35s | %11.1f | %13.1f |", shortType(typ), early.ByTypeMean[typ], late.ByTypeMean[typ])
	}
	if h.CANTurn > 0 {
		t := h.Turns[h.CANTurn-1]
		p("")
		p("   the continuing turn %d: %d events, %d bytes, across runs %d and %d:", t.Turn, t.Events, t.Bytes, t.Run, t.Run+1)
		p("     %s", strings.Join(t.Types, ", "))
	}
	for i, rs := range h.RunSizes {
		p("   run %d: %d events, %d bytes by proto.Size, history_size_bytes %d", i+1, rs.Events, rs.ProtoBytes, rs.Server)
	}
	p("   (history measurement took %s)", h.Elapsed.Round(time.Second))
	p("")
}

// printOverhead reports the overhead measurement (overhead.go): turn
// times beside BareLoop, where they go on the server and in the worker,
// and the bytes a turn adds.
func (r *report) printOverhead(p func(string, ...any)) []check {
	o := r.over
	if o == nil {
		return []check{{"turn overhead", "not measured", false}}
	}
	a, b := summarize(o.Agent), summarize(o.Bare)
	ratio := float64(a.Median) / float64(b.Median)
	r.printTurnTimes(p)
	printOverheadThirds(p, o)
	printOverheadSteps(p, o)
	if t := r.timings; t != nil {
		t.print(p)
	}
	ab, bb := meanInt(o.AgentBytes), meanInt(o.BareBytes)
	bytesRatio := ab / bb
	printOverheadBytes(p, o)
	p90 := float64(a.P90) / float64(b.P90)
	return []check{
		{fmt.Sprintf("turn overhead, median AgentTask / median BareLoop <= %.2f", maxOverheadRatio),
			fmt.Sprintf("%.2f (%s / %s)", ratio, ms(a.Median), ms(b.Median)), ratio <= maxOverheadRatio},
		{fmt.Sprintf("turn overhead, p90 AgentTask / p90 BareLoop <= %.2f", maxP90Ratio),
			fmt.Sprintf("%.2f (%s / %s)", p90, ms(a.P90), ms(b.P90)), p90 <= maxP90Ratio},
		{fmt.Sprintf("bytes per turn, AgentTask / BareLoop <= %.2f", maxBareBytesRatio),
			fmt.Sprintf("%.3f (%.0f / %.0f)", bytesRatio, ab, bb), bytesRatio <= maxBareBytesRatio},
	}
}

// printTurnTimes is the overhead section's opening: how the turns were
// driven, their times on each loop, and the ratios between them.
func (r *report) printTurnTimes(p func(string, ...any)) {
	o := r.over
	a, b, l := summarize(o.Agent), summarize(o.Bare), summarize(o.InProcess)
	sa, sb, sl := serverTotals(o.AgentPhases), serverTotals(o.BarePhases), serverTotals(o.InProcessPhases)
	p("2. Turn overhead: %d measured turns of each (after %d warm-up turns each), AgentTask and BareLoop alternating,", o.N, o.Warm)
	p("   polled by query every %s, %s pause after each turn; time from before the signal to the query reply showing the output.", r.opts.poll, o.Pause)
	p("   Both ask the same echo endpoint over HTTP (BareLoop: one chat-completions POST of the conversation so far, kept in")
	p("   its worker's memory). For reference,")
	p("   a third loop takes its turn after them, answering in process with no model call (the baseline until 2026-12-03).")
	p("")
	p("   |            | median   | p90      | mean     | min      | signal call | queries/turn | server: signal -> last event (median, p90) |")
	p("   |------------|----------|----------|----------|----------|-------------|--------------|--------------------------------------------|")
	for _, row := range []struct {
		name string
		s    summary
		srv  []time.Duration
	}{{"AgentTask", a, sa}, {"BareLoop", b, sb}, {"in-process", l, sl}} {
		p("   | %-10s | %8s | %8s | %8s | %8s | %11s | %12d | %-42s |", row.name, ms(row.s.Median), ms(row.s.P90), ms(row.s.Mean), ms(row.s.Min),
			ms(row.s.Signal), row.s.PollsMedian, ms(percentile(row.srv, 50))+", "+ms(percentile(row.srv, 90)))
	}
	p("")
	p("   AgentTask / BareLoop: median %.2f, p90 %.2f; server-side median %.2f", float64(a.Median)/float64(b.Median),
		float64(a.P90)/float64(b.P90), float64(percentile(sa, 50))/float64(percentile(sb, 50)))
	p("   model request per turn, its texts and roles (mean bytes), AgentTask / BareLoop: %.0f / %.0f (the same conversation; AgentTask's adds its instructions)",
		meanInt(o.AgentRequests), meanInt(o.BareRequests))
	if na, nb := len(o.AgentRequests), len(o.BareRequests); na > 0 && nb > 0 {
		p("   at the first, middle and last measured turn: AgentTask %d, %d, %d; BareLoop %d, %d, %d",
			o.AgentRequests[0], o.AgentRequests[na/2], o.AgentRequests[na-1], o.BareRequests[0], o.BareRequests[nb/2], o.BareRequests[nb-1])
	}
	p("   AgentTask / the loop answering in process: median %.2f, p90 %.2f (the model's HTTP round trip counted as the runtime's)",
		float64(a.Median)/float64(l.Median), float64(a.P90)/float64(l.P90))
}

// printOverheadThirds compares the loops by thirds of the measured turns:
// AgentTask's window grows as the conversation does, so a cost that grows
// with it shows as a ratio that climbs.
func printOverheadThirds(p func(string, ...any), o *overheadResult) {
	var thirds []string
	for i := 0; i < 3; i++ {
		lo, hi := i*len(o.Agent)/3, (i+1)*len(o.Agent)/3
		ta, tb := summarize(o.Agent[lo:hi]), summarize(o.Bare[lo:hi])
		thirds = append(thirds, fmt.Sprintf("turns %d-%d: %s / %s = %.2f", o.Warm+lo+1, o.Warm+hi, ms(ta.Median), ms(tb.Median),
			float64(ta.Median)/float64(tb.Median)))
	}
	p("   by thirds (the AgentTask conversation, and the window each model call sends, grows as it goes):")
	for _, t := range thirds {
		p("     %s", t)
	}
	p("")
}

// printOverheadSteps shows where a turn's time goes by the server's event
// timestamps, side by side, and warns when the server's dispatch limit,
// not the turns, is what was measured.
func printOverheadSteps(p func(string, ...any), o *overheadResult) {
	p("   where a turn's time goes, by the server's event timestamps (median per step):")
	p("   | step                                         | AgentTask | BareLoop |")
	p("   |----------------------------------------------|-----------|----------|")
	am, bm := stepMedians(o.AgentPhases), stepMedians(o.BarePhases)
	for i := 0; i < max(len(am), len(bm)); i++ {
		name, av, bv := "", "", ""
		if i < len(am) {
			name, av = am[i].name, ms(am[i].median)
		}
		if i < len(bm) {
			if name == "" {
				name = bm[i].name
			}
			bv = ms(bm[i].median)
			if bm[i].name != name {
				bv += " (" + bm[i].name + ")"
			}
		}
		p("   | %-44s | %9s | %8s |", name, av, bv)
	}
	if d := dispatchMedian(am, bm); d > throttledDispatch {
		p("   WARNING: a workflow task waited %s (median) between scheduled and started: the server's", ms(d))
		p("   workflow-task dispatch was throttled (history.transferProcessorMaxPollRPS, 20/s on the one shard);")
		p("   raise -pause, or the timings above measure that limit rather than the turns.")
	}
}

// print is the -instrument table: the model activity's parts, timed in
// the AgentTask worker (instrument.go).
func (t *activityTimings) print(p func(string, ...any)) {
	p("")
	p("   inside the AgentTask worker (-instrument; every turn of this phase, warm-up included):")
	p("   | part                                             | calls | median   | p90      | total    | median, first third | median, last third |")
	p("   |--------------------------------------------------|-------|----------|----------|----------|---------------------|--------------------|")
	t.mu.Lock()
	defer t.mu.Unlock()
	names := slices.Clone(t.order)
	slices.SortStableFunc(names, func(a, b string) int { // the whole activity first, its parts after
		return strings.Compare(a[:1], b[:1]) * -1
	})
	for _, name := range names {
		ds := t.by[name]
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		third := max(len(ds)/3, 1)
		p("   | %-48s | %5d | %8s | %8s | %8s | %19s | %18s |", name, len(ds), ms(percentile(ds, 50)), ms(percentile(ds, 90)), sum.Round(time.Millisecond),
			ms(percentile(ds[:third], 50)), ms(percentile(ds[len(ds)-third:], 50)))
	}
	if n := len(t.reqBytes); n >= 3 {
		p("   model request body: %d bytes at the first call, %d at the middle one, %d at the last", t.reqBytes[0], t.reqBytes[n/2], t.reqBytes[n-1])
	}
}

// printOverheadBytes compares the bytes a turn adds to each loop's
// history, by event type, and closes the overhead section.
func printOverheadBytes(p func(string, ...any), o *overheadResult) {
	ab, bb := meanInt(o.AgentBytes), meanInt(o.BareBytes)
	p("")
	p("   bytes per turn (proto.Size of the turn's events; both carry the same input document and answer text):")
	p("   AgentTask %.1f, BareLoop %.1f: %.3f", ab, bb, ab/bb)
	p("   | event type                          | AgentTask | BareLoop |")
	p("   |-------------------------------------|-----------|----------|")
	for _, typ := range typesOf(o.AgentByType, o.BareByType) {
		p("   | %-35s | %9.1f | %8.1f |", shortType(typ), o.AgentByType[typ], o.BareByType[typ])
	}
	p("   (overhead measurement took %s)", o.Elapsed.Round(time.Second))
	p("")
}

type check struct {
	what, got string
	ok        bool
}

func serverNote(ws windowStats) string {
	s := fmt.Sprintf(" (%d turns)", ws.ServerTurns)
	if !ws.ServerEventsMatch {
		s += " !len"
	}
	return s
}

func runList(runs map[int]bool) string {
	var ns []string
	for r := range runs {
		ns = append(ns, fmt.Sprint(r))
	}
	slices.Sort(ns)
	return strings.Join(ns, ", ")
}

func eventTypes(ws ...windowStats) []enumspb.EventType {
	seen := map[enumspb.EventType]bool{}
	for _, w := range ws {
		for t := range w.ByTypeMean {
			seen[t] = true
		}
	}
	var out []enumspb.EventType
	for t := range seen {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// cpuModel reads the CPU's name on Linux; elsewhere it says nothing.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// throttledDispatch: an unthrottled workflow task starts within a few ms of
// being scheduled on this server; the transfer queue's rate limit makes it
// wait for its next 50 ms tick.
const throttledDispatch = 15 * time.Millisecond

// dispatchMedian is the largest median wait between a workflow task's
// scheduled and started events.
func dispatchMedian(sides ...[]stepMedian) time.Duration {
	var d time.Duration
	for _, side := range sides {
		for _, s := range side {
			if strings.HasPrefix(s.name, "wft scheduled -> wft started") {
				d = max(d, s.median)
			}
		}
	}
	return d
}

// printStreaming reports the streaming measurement (streaming.go).
func (r *report) printStreaming(p func(string, ...any)) []check {
	st := r.stream
	if st == nil {
		return []check{{"first-event latency", "not measured", false}, {"history events per streamed turn", "not measured", false}}
	}
	p("3. Streaming: %d runs of one task through the Tasks API with \"stream\": true (worker -> NATS JetStream -> API -> HTTP client),", st.N)
	p("   each beside the same run unstreamed (an API without a broker); the test model streams Echo's answer word by word")
	p("")
	p("   first event: from the model writing its first delta to the client reading the first text event")
	p("   | p50      | p90      | max      | min      |")
	p("   |----------|----------|----------|----------|")
	p("   | %8s | %8s | %8s | %8s |", ms(percentile(st.FirstEvent, 50)), ms(percentile(st.FirstEvent, 90)), ms(slices.Max(st.FirstEvent)), ms(slices.Min(st.FirstEvent)))
	p("")
	sMin, sMax, pMin, pMax := slices.Min(st.Streamed), slices.Max(st.Streamed), slices.Min(st.Plain), slices.Max(st.Plain)
	p("   history events of a run once it answered (start, the turn, the ask update; min-max): streamed %d-%d, unstreamed %d-%d", sMin, sMax, pMin, pMax)
	p("   history bytes of those runs (min-max): streamed %d-%d, unstreamed %d-%d", slices.Min(st.StreamedBytes), slices.Max(st.StreamedBytes), slices.Min(st.PlainBytes), slices.Max(st.PlainBytes))
	if tr := st.Tools; tr != nil && tr.N > 0 {
		p("   a tool-using task (one activity capability, one tool round per run), %d runs, streamed (every task streams):", tr.N)
		p("   history events %d-%d, bytes %d-%d; events streamed per run %d-%d (%s)", slices.Min(tr.Events), slices.Max(tr.Events),
			slices.Min(tr.Bytes), slices.Max(tr.Bytes), slices.Min(tr.Streamed), slices.Max(tr.Streamed), typeCounts(tr.Types, tr.N))
	}
	p("   (streaming measurement took %s)", st.Elapsed.Round(time.Second))
	p("")
	p90 := percentile(st.FirstEvent, 90)
	return []check{
		{fmt.Sprintf("first-event latency p90 < %s", ms(maxFirstEvent)), ms(p90), p90 < maxFirstEvent},
		{"history events per streamed run == unstreamed", fmt.Sprintf("%d-%d vs %d-%d", sMin, sMax, pMin, pMax), sMin == sMax && pMin == pMax && sMin == pMin},
	}
}

// printLoad reports the load measurement (load.go).
func (r *report) printLoad(p func(string, ...any)) []check {
	l := r.load
	if l == nil {
		return []check{{"load: failed turns and workflows == 0", "not measured", false}, {"load: throughput ratio", "not measured", false}}
	}
	p("4. Load: %d conversations × %d turns at once on one worker process (this one: the side's worker, the driver", l.N, l.Turns)
	p("   and the echo model); each turn is one update that returns once the answer is committed (AgentTask's `ask`;")
	p("   BareAsk's `ask` runs one activity asking the same model); BareAsk's %d workflows first, then AgentTask's, each side on a", l.N)
	p("   fresh server of its own (the same binary and profile) and fresh workers, so neither runs on the other's histories")
	p("")
	p("   the server's limits (agentdev profile %q; Temporal's default in brackets):", l.Profile)
	if len(l.Settings) == 0 {
		p("     none changed: Temporal's defaults (history.transferProcessorMaxPollRPS 20, frontend.rps 2400, matching.rps 1200, ...)")
	}
	for _, s := range l.Settings {
		p("     %-40s %v (%v)", s.Key, s.Value, s.Default)
	}
	p("   the workers (AGENT_WORKER_*): %s", tuningLabel(l.Tuning, l.BenchSet))
	p("")
	p("   |           | turns  | errors | wall     | turns/s | p50         | p90         | p99         | max         | start: %d workflows |", l.N)
	p("   |-----------|--------|--------|----------|---------|-------------|-------------|-------------|-------------|---------------------|")
	for _, s := range []*loadSide{l.Bare, l.Agent} {
		ls := summarizeLatency(s.Latencies)
		p("   | %-9s | %6d | %6d | %8s | %7.1f | %11s | %11s | %11s | %11s | %19s |", s.Name, len(s.Latencies), s.Errors,
			s.Wall.Round(10*time.Millisecond), s.throughput(), ms(ls.P50), ms(ls.P90), ms(ls.P99), ms(ls.Max), s.Start.Round(10*time.Millisecond))
	}
	a, b := summarizeLatency(l.Agent.Latencies), summarizeLatency(l.Bare.Latencies)
	ratio := ratioOf(l.Agent.throughput(), l.Bare.throughput())
	p("")
	p("   AgentTask / BareAsk: throughput %.2f, p50 latency %.2f, p99 latency %.2f", ratio,
		ratioOf(float64(a.P50), float64(b.P50)), ratioOf(float64(a.P99), float64(b.P99)))
	p("")
	l.printMemory(p)
	return []check{
		{"load: failed turns and workflows == 0",
			fmt.Sprintf("%d AgentTask, %d BareAsk (of %d turns each)", l.Agent.Errors, l.Bare.Errors, l.N*l.Turns),
			l.Agent.Errors == 0 && l.Bare.Errors == 0 && len(l.Agent.Latencies) == l.N*l.Turns && len(l.Bare.Latencies) == l.N*l.Turns},
		{fmt.Sprintf("load: throughput, AgentTask / BareAsk >= %.2f", minLoadRatio), fmt.Sprintf("%.2f", ratio), ratio >= minLoadRatio},
	}
}

// printMemory is the load section's second half: memory and CPU of both
// processes during each side, the workflow tasks that waited too long,
// the first errors.
func (l *loadResult) printMemory(p func(string, ...any)) {
	p("   memory and CPU during each side: RSS before (after a GC) -> peak (VmHWM, reset before the side); this process's")
	p("   Go heap in use, goroutine stacks and goroutines at their highest (sampled every 100 ms); CPU time used:")
	p("   |           | this process: RSS   | heap    | stacks  | goroutines | server: RSS         | CPU: this process | server   | both / wall |")
	p("   |-----------|---------------------|---------|---------|------------|---------------------|-------------------|----------|-------------|")
	for _, s := range []*loadSide{l.Bare, l.Agent} {
		peak, speak := mib(s.RSSPeak), mib(s.ServerRSSPeak)
		if !s.PeakExact {
			peak = "n/a"
		}
		if !s.ServerPeakOK {
			speak = "n/a"
		}
		busy := ratioOf((s.CPU + s.ServerCPU).Seconds(), (s.Start + s.Wall).Seconds())
		p("   | %-9s | %7s -> %-8s | %7s | %7s | %10d | %7s -> %-8s | %17s | %8s | %5.2f cores |", s.Name, mib(s.RSSBefore), peak,
			mib(s.HeapPeak), mib(s.StackPeak), s.GoroutinePeak, mib(s.ServerRSSBefore), speak,
			s.CPU.Round(100*time.Millisecond), s.ServerCPU.Round(100*time.Millisecond), busy)
	}
	p("")
	for _, s := range []*loadSide{l.Bare, l.Agent} {
		p("   %s: %d workflow tasks timed out before a worker took them, in the histories of %d sampled workflows", s.Name, s.TimedOutTasks, s.Sampled)
	}
	for _, s := range []*loadSide{l.Bare, l.Agent} {
		for _, e := range s.FirstErrs {
			p("   %s error: %s", s.Name, e)
		}
	}
	p("   (load measurement took %s)", l.Elapsed.Round(time.Second))
	p("")
}

// minLoadRatio is the bench's goal: 1,000 conversations at 0.95 of the bare
// loop's throughput. On the 2-core bench machine the ratio ranged
// 0.61-0.91 before it (docs/bench.md), so the bench fails here until the
// runtime's own cost per turn comes down.
const minLoadRatio = 0.95

func ratioOf(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func mib(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// tuningLabel says what the SDK workers ran with: the variable's value,
// the bench's choice for the load, or the SDK's default (Go SDK v1.50).
func tuningLabel(t workerkit.Tuning, bench map[string]bool) string {
	f := func(name string, v, def any, zero bool) string {
		switch {
		case zero:
			return fmt.Sprintf("%s %v (SDK default)", name, def)
		case bench[name]:
			return fmt.Sprintf("%s %v (bench default)", name, v)
		}
		return fmt.Sprintf("%s %v", name, v)
	}
	return strings.Join([]string{
		f("workflow slots", t.WorkflowSlots, 1000, t.WorkflowSlots == 0),
		f("activity slots", t.ActivitySlots, 1000, t.ActivitySlots == 0),
		f("workflow pollers", t.WorkflowPollers, 2, t.WorkflowPollers == 0),
		f("activity pollers", t.ActivityPollers, 2, t.ActivityPollers == 0),
		f("sticky cache", t.StickyCache, 10000, t.StickyCache == 0),
		f("sticky timeout", t.StickyTimeout, 5*time.Second, t.StickyTimeout == 0),
	}, ", ")
}

// typesOf is the event types of either map, in enum order.
func typesOf(a, b map[enumspb.EventType]float64) []enumspb.EventType {
	var ts []enumspb.EventType
	for t := range a {
		ts = append(ts, t)
	}
	for t := range b {
		if _, ok := a[t]; !ok {
			ts = append(ts, t)
		}
	}
	slices.Sort(ts)
	return ts
}

// typeCounts lists event types with their count per run.
func typeCounts(types map[string]int, runs int) string {
	keys := make([]string, 0, len(types))
	for k := range types {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%.1f", k, float64(types[k])/float64(runs))
	}
	return strings.Join(parts, ", ")
}
