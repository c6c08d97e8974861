package workflows

import (
	"encoding/json"
	"time"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// Carry is the whole state of a task: what one run hands the next when it
// continues as new. Large content travels by reference (the transcript);
// what stays inline is bounded (see maxCarryBytes).
//
// Carry's own fields are the conversation's record, read and changed only
// by its methods in this file. Each concern's record is embedded (its JSON
// fields are Carry's, as they always were) and declared, with the methods
// that change it, in that concern's file.
type Carry struct {
	Transcript activities.TranscriptKey `json:"transcript"`

	// The messages list is Transcript[0:Base] followed by Held.
	Base int         `json:"base"`
	Held []heldEntry `json:"held"`
	// Positions below Durable are final in the transcript.
	Durable int `json:"durable"`

	queueRecord // inputs received and not yet committed, their IDs, refusals (intake.go)

	Turns         int                 `json:"turns"`
	Outputs       int                 `json:"outputs"`
	Usage         contract.Usage      `json:"usage"`
	LastCommit    string              `json:"last_commit,omitempty"` // the latest committed_at handed out
	LastOutputPos int                 `json:"last_output_pos"`       // -1: no output yet
	RecentTurns   []contract.TurnInfo `json:"recent_turns,omitempty"`
	Closing       bool                `json:"closing,omitempty"`
	Run           int                 `json:"run"`
	LastActivity  string              `json:"last_activity"` // last input received or turn finished: the idle clock

	collectedRecord // what the task saved (collected.go)
	outputRecord    // the shaping pass's model (output.go)
	secretsRecord   // the secrets' prints (secrets.go)

	// Finished: the model called `finish`; the task ends after this turn.
	Finished bool `json:"finished,omitempty"`
	// OwnFrom is where this task's own entries begin: earlier ones belong to
	// the task it continues, whose files live in that task's space.
	OwnFrom int `json:"own_from,omitempty"`

	stashRecord     // the agent spec's reference once stored (largestate.go)
	approvalsRecord // pending and recently decided approvals, a paused turn (approvals.go)
	budgetRecord    // the task's budget, what it used and holds (budget.go)

	// WindowFrom is where the last model call's window began: the next
	// call keeps it when it can (rules.windowHint).
	WindowFrom int `json:"window_from,omitempty"`
}

// heldEntry is a committed entry kept in workflow memory. Turn is the turn
// that produced an output, which names its pending copy in the transcript.
type heldEntry struct {
	Msg  contract.Message `json:"msg"`
	Turn int              `json:"turn,omitempty"`
	// Whole: an output this task did not produce (it continues an earlier
	// task's conversation), so it is written whole instead of stamped.
	Whole bool `json:"whole,omitempty"`
}

// recentTurnsKept bounds RecentTurns in status.
const recentTurnsKept = 10

// maxCarryBytes bounds the continue-as-new input. A run whose state does not
// fit postpones continuing until the next turn has drained its queue.
const maxCarryBytes = 400 << 10

func newCarry(now time.Time) *Carry {
	return &Carry{LastOutputPos: -1, Run: 1, LastActivity: contract.FormatTime(now)}
}

// length is the length of the messages list's committed part.
func (c *Carry) length() int { return c.Base + len(c.Held) }

// at returns the held entry at position p (p >= Base).
func (c *Carry) at(p int) *heldEntry { return &c.Held[p-c.Base] }

// nextInstant hands out a commit instant: now, or a microsecond after the
// previous one where the workflow clock has not moved, so committed_at
// strictly increases from one turn to the next.
func (c *Carry) nextInstant(now time.Time) string {
	t := now.UTC().Truncate(time.Microsecond)
	if c.LastCommit != "" {
		if last, err := contract.ParseTime(c.LastCommit); err == nil && !t.After(last) {
			t = last.Add(time.Microsecond)
		}
	}
	c.LastCommit = contract.FormatTime(t)
	return c.LastCommit
}

// pendingEntries is what the next activity must make durable: committed
// inputs as whole entries, outputs as stamps (their producer stored them).
func (c *Carry) pendingEntries() activities.Entries {
	var e activities.Entries
	for p := c.Durable; p < c.length(); p++ {
		h := c.at(p)
		if h.Msg.Type == contract.TypeOutput && !h.Whole {
			e.Stamps = append(e.Stamps, activities.OutputStamp{Position: p, Turn: h.Turn, CommittedAt: h.Msg.CommittedAt})
		} else {
			e.Write = append(e.Write, activities.PositionedEntry{Position: p, Entry: h.Msg})
		}
	}
	return e
}

// trimForCarry drops held entries that are durable, keeping the last output
// (the result reports it) and everything after it.
func (c *Carry) trimForCarry() {
	keepFrom := c.Durable
	if c.LastOutputPos >= c.Base && c.LastOutputPos < keepFrom {
		keepFrom = c.LastOutputPos
	}
	if keepFrom <= c.Base {
		return
	}
	c.Held = append([]heldEntry(nil), c.Held[keepFrom-c.Base:]...)
	c.Base = keepFrom
}

func (c *Carry) lastOutput() *contract.TaskIO {
	if c.LastOutputPos < c.Base {
		return nil
	}
	out := c.at(c.LastOutputPos).Msg.TaskIO
	return &out
}

func (c *Carry) recordTurn(ti contract.TurnInfo) {
	for i := range c.RecentTurns {
		if c.RecentTurns[i].Turn == ti.Turn {
			c.RecentTurns[i] = ti
			return
		}
	}
	c.RecentTurns = append(c.RecentTurns, ti)
	if len(c.RecentTurns) > recentTurnsKept {
		c.RecentTurns = c.RecentTurns[len(c.RecentTurns)-recentTurnsKept:]
	}
}

// transcriptKey names the transcript the task's entries live in.
func (c *Carry) transcriptKey() activities.TranscriptKey { return c.Transcript }

// touch restarts the idle clock: an input arrived, or a turn ended.
func (c *Carry) touch(now time.Time) { c.LastActivity = contract.FormatTime(now) }

// beginTurn counts a new turn and commits every queued input at one fresh
// instant: the turn's record so far, and where its inputs begin.
func (c *Carry) beginTurn(now time.Time) (info contract.TurnInfo, turnFrom int) {
	c.Turns++
	turnFrom = c.length()
	info = contract.TurnInfo{Turn: c.Turns, CommittedAt: c.nextInstant(now)}
	info.Inputs = c.commitQueued(info.CommittedAt)
	c.recordTurn(info)
	return info, turnFrom
}

// commitQueued commits every queued input at instant at, in the order they
// were queued, and says how many there were.
func (c *Carry) commitQueued(at string) int {
	queued := c.takeQueue()
	for _, in := range queued {
		in.CommittedAt = at
		c.Held = append(c.Held, heldEntry{Msg: in})
	}
	return len(queued)
}

// commitNext commits the next queued inputs, one at each of the instants
// given (inputs handed back by uncommitLast), and says how many.
func (c *Carry) commitNext(instants []string) int {
	if n := c.queued(); len(instants) > n {
		instants = instants[:n]
	}
	for i, in := range c.takeFirst(len(instants)) {
		in.CommittedAt = instants[i]
		c.Held = append(c.Held, heldEntry{Msg: in})
	}
	return len(instants)
}

// uncommitLast hands the last n committed inputs back to the front of the
// queue without committed_at, returning the instants they had.
func (c *Carry) uncommitLast(n int) (instants []string) {
	back := make([]contract.Message, 0, n)
	for _, h := range c.Held[len(c.Held)-n:] {
		m := h.Msg
		instants = append(instants, m.CommittedAt)
		m.CommittedAt = ""
		back = append(back, m)
	}
	c.Held = c.Held[:len(c.Held)-n]
	c.requeue(back)
	return instants
}

// commitAnswer places a turn's answer in the conversation at a fresh
// instant, strictly after the inputs it answers; everything before it is
// final in the transcript now. It returns the output as committed.
func (c *Carry) commitAnswer(out contract.TaskIO, turn int, now time.Time) contract.TaskIO {
	c.Durable = c.length()
	out.ReceivedAt = ""
	out.CommittedAt = c.nextInstant(now)
	c.LastOutputPos = c.length()
	c.Held = append(c.Held, heldEntry{Msg: contract.Message{Type: contract.TypeOutput, TaskIO: out}, Turn: turn})
	c.Outputs++
	return out
}

// allDurable: every committed entry is in the transcript now.
func (c *Carry) allDurable() { c.Durable = c.length() }

// addUsage counts what a model call used.
func (c *Carry) addUsage(u contract.Usage) { c.Usage = c.Usage.Add(u) }

// used is what the task's model calls used so far.
func (c *Carry) used() contract.Usage { return c.Usage }

// turns is the number of turns the task began.
func (c *Carry) turns() int { return c.Turns }

// ownFrom is where this task's own entries begin.
func (c *Carry) ownFrom() int { return c.OwnFrom }

// windowHint is where the last model call's window began.
func (c *Carry) windowHint() int { return c.WindowFrom }

// keepWindow notes where the last model call's window began.
func (c *Carry) keepWindow(from int) { c.WindowFrom = from }

// close notes that a close was asked for: inputs received are answered,
// new ones refused; it says whether this is the first request.
func (c *Carry) close() (first bool) {
	first = !c.Closing
	c.Closing = true
	return first
}

// closing says a close was asked for.
func (c *Carry) closing() bool { return c.Closing }

// finish notes the model called `finish`: the task ends after this turn.
func (c *Carry) finish() { c.Finished = true }

// finished says the model called `finish`.
func (c *Carry) finished() bool { return c.Finished }

// run is this run's number, 1 for a task's first.
func (c *Carry) run() int { return c.Run }

// idleSince is when the idle clock last restarted.
func (c *Carry) idleSince() time.Time {
	t, _ := contract.ParseTime(c.LastActivity)
	return t
}

// outputs is the number of outputs the task committed.
func (c *Carry) outputs() int { return c.Outputs }

// recentTurns are the last turns' records, newest last, and the last of
// them (nil when no turn began), as status shows them.
func (c *Carry) recentTurns() (*contract.TurnInfo, []contract.TurnInfo) {
	n := len(c.RecentTurns)
	if n == 0 {
		return nil, nil
	}
	last := c.RecentTurns[n-1]
	return &last, append([]contract.TurnInfo(nil), c.RecentTurns...)
}

// base is where the entries held in workflow memory begin: those before it
// live in the transcript only.
func (c *Carry) base() int { return c.Base }

// durableTo is where the entries not yet final in the transcript begin.
func (c *Carry) durableTo() int { return c.Durable }

// commitHistory commits the start argument's history as the first
// entries, at the task's start instant, a microsecond apart, in order:
// written whole by the first call.
func (c *Carry) commitHistory(history []contract.HistoryMessage, now time.Time) {
	for _, h := range history {
		at := c.nextInstant(now) // a microsecond apart: each entry in its own commit
		io := contract.TaskIO{Message: contract.TextParts(h.Content), CommittedAt: at}
		m := contract.Message{Type: contract.TypeOutput, TaskIO: io}
		if h.Role == "user" {
			m.Type, m.ReceivedAt = contract.TypeInput, at
		} else {
			c.LastOutputPos = c.length()
		}
		c.Held = append(c.Held, heldEntry{Msg: m, Whole: true})
	}
}

// tooLargeToCarry: without rules.carryByRef, a run whose state did not fit
// the continue-as-new argument postponed continuing.
func (c *Carry) tooLargeToCarry(carryByRef bool) bool {
	return !carryByRef && c.carriedSize() > maxCarryBytes
}

// lastText is the text of the latest held entry of type typ whose text
// is not empty ("" when none).
func (c *Carry) lastText(typ string, text func(contract.TaskIO) string) string {
	for i := len(c.Held) - 1; i >= 0; i-- {
		if m := c.Held[i].Msg; m.Type == typ {
			if s := text(m.TaskIO); s != "" {
				return s
			}
		}
	}
	return ""
}

// continued takes the carry of the previous run as this run's.
func (c *Carry) continued() { c.Run++ }

// inTranscript names the transcript the task's entries are written to.
func (c *Carry) inTranscript(key activities.TranscriptKey) { c.Transcript = key }

// Read by other parts' files.

// firstEntry is the conversation's first entry while the task holds it
// (its first run, nothing written before it).
func (c *Carry) firstEntry() (contract.Message, bool) {
	if c.Base == 0 && len(c.Held) > 0 {
		return c.Held[0].Msg, true
	}
	return contract.Message{}, false
}

// ownsFrom notes where this task's own entries begin (it shares the
// transcript of the task it continues).
func (c *Carry) ownsFrom(n int) { c.OwnFrom = n }

// holdTail takes the tail of a conversation this task continues, from
// position from on: held, to be written whole by the first call.
func (c *Carry) holdTail(from int, tail []contract.Message) {
	c.Base, c.Durable = from, from
	for i, m := range tail {
		c.Held = append(c.Held, heldEntry{Msg: m, Whole: true})
		c.LastCommit = m.CommittedAt
		if m.Type == contract.TypeOutput {
			c.LastOutputPos = from + i
		}
	}
}

// carriedSize is the size of the carry as the next run would be handed it.
func (c *Carry) carriedSize() int {
	cc := *c
	cc.Held = append([]heldEntry(nil), cc.Held...)
	cc.trimForCarry()
	b, _ := json.Marshal(cc)
	return len(b)
}

// commitOutput places the answer in the conversation at a fresh instant
// after now, strictly after the inputs it answers, collects what it
// carries (savedByRef: rules.savedByRef), counts its usage, records the
// turn, and returns the answer as committed.
func (c *Carry) commitOutput(now time.Time, turn int, info *contract.TurnInfo, res activities.ModelTurnResult, savedByRef bool, sec secrets) contract.TaskIO {
	out := c.commitAnswer(res.Output, turn, now)
	c.collectOutput(out, res.ValueRefs, savedByRef, sec)
	c.addUsage(res.Usage.Usage) // (rounds with capability calls were added as they ran)
	info.StopReason, info.Model, info.Usage = res.StopReason, res.Model, res.Usage.Usage
	c.recordTurn(*info)
	return out
}
