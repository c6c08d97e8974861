package main

import (
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
)

// Where a turn's time goes, by the server's own clock: the gaps between
// consecutive events of the turn (signal -> workflow task scheduled ->
// started -> completed -> activity scheduled -> started -> completed -> ...).
// Each gap is named after the pair of events around it; gaps between
// events written in one batch are zero. A workflow task's started ->
// completed gap is the worker's processing plus two RPCs; an activity's
// started -> completed gap is the activity's run plus its completion RPC.

// step names the gap between two consecutive events.
type step struct{ from, to enumspb.EventType }

func (s step) String() string { return shortType(s.from) + " -> " + shortType(s.to) }

func shortType(t enumspb.EventType) string {
	r := strings.NewReplacer("WorkflowExecution", "Workflow ", "WorkflowTask", "WFT ", "ActivityTask", "Activity ")
	return strings.ToLower(r.Replace(t.String()))
}

// turnPhases is one turn, as the server recorded it.
type turnPhases struct {
	total time.Duration // signal .. last event of the turn
	steps []stepTime    // in event order
}

type stepTime struct {
	step
	d time.Duration
}

func phasesOf(sp turnSpan) turnPhases {
	var tp turnPhases
	evs := sp.events
	for i := 1; i < len(evs); i++ {
		d := evs[i].GetEventTime().AsTime().Sub(evs[i-1].GetEventTime().AsTime())
		tp.steps = append(tp.steps, stepTime{step{evs[i-1].GetEventType(), evs[i].GetEventType()}, d})
	}
	tp.total = evs[len(evs)-1].GetEventTime().AsTime().Sub(evs[0].GetEventTime().AsTime())
	return tp
}

// stepMedians gives, for each step in the order first seen, the median of
// its durations over turns (a step that occurs twice in a turn, such as
// workflow task started -> completed, is told apart by its occurrence).
type stepMedian struct {
	name   string
	median time.Duration
}

func stepMedians(turns []turnPhases) []stepMedian {
	var order []string
	by := map[string][]time.Duration{}
	for _, tp := range turns {
		seen := map[string]int{}
		for _, st := range tp.steps {
			name := st.String()
			seen[name]++
			if seen[name] > 1 {
				name += " (" + ordinal(seen[name]) + ")"
			}
			if _, ok := by[name]; !ok {
				order = append(order, name)
			}
			by[name] = append(by[name], st.d)
		}
	}
	out := make([]stepMedian, 0, len(order))
	for _, name := range order {
		out = append(out, stepMedian{name, percentile(by[name], 50)})
	}
	return out
}

func ordinal(n int) string {
	switch n {
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return string(rune('0'+n)) + "th"
}
