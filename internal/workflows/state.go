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
type Carry struct {
	Transcript activities.TranscriptKey `json:"transcript"`

	// The messages list is Transcript[0:Base] followed by Held.
	Base int         `json:"base"`
	Held []heldEntry `json:"held"`
	// Positions below Durable are final in the transcript.
	Durable int `json:"durable"`
	// Queue holds inputs received and not yet committed, in arrival order.
	Queue []contract.Message `json:"queue,omitempty"`

	Turns         int        `json:"turns"`
	Outputs       int        `json:"outputs"`
	Usage         Usage      `json:"usage"`
	Rejected      int        `json:"rejected"`
	LastRejection *Rejection `json:"last_rejection,omitempty"`
	LastCommit    string     `json:"last_commit,omitempty"` // the latest committed_at handed out
	LastOutputPos int        `json:"last_output_pos"`       // -1: no output yet
	RecentTurns   []TurnInfo `json:"recent_turns,omitempty"`
	Closing       bool       `json:"closing,omitempty"`
	Run           int        `json:"run"`
	LastActivity  string     `json:"last_activity"` // last input received or turn finished: the idle clock

	// What the task saved, oldest first (by name: a later save replaces).
	Collected []Collected `json:"collected,omitempty"`
	// Finished: the model called `finish`; the task ends after this turn.
	Finished bool `json:"finished,omitempty"`
	// OutputModel is the model of the shaping pass, learned at the start.
	OutputModel string `json:"output_model,omitempty"`
	// OwnFrom is where this task's own entries begin: earlier ones belong to
	// the task it continues, whose files live in that task's space.
	OwnFrom int `json:"own_from,omitempty"`
	// InputIDs are the IDs of the last inputs taken, oldest first
	// (inputids.go): a repeated ID creates no second input.
	InputIDs []seenInput `json:"input_ids,omitempty"`
	// SecretPrints identify the secrets' values once the start argument no
	// longer has them (secrets.go, rules.secretPrints).
	SecretPrints []secretPrint `json:"secret_prints,omitempty"`
	// AgentRef names the agent spec in the stash once it was stored there
	// (largestate.go, rules.agentByRef): calls carry the reference.
	AgentRef *activities.StashRef `json:"agent_ref,omitempty"`
	// Approvals are the pending approvals and the last decided ones
	// (approvals.go, rules.approvals); Paused is a turn waiting for some of
	// them, carried across continue-as-new.
	Approvals []approvalRecord `json:"approvals,omitempty"`
	Paused    *pausedTurn      `json:"paused,omitempty"`
	// Budget is the task's budget, what it used and holds for sub-tasks
	// (budget.go, rules.spendBudget).
	Budget *budgetState `json:"budget,omitempty"`
	// WindowFrom is where the last model call's window began: the next
	// call keeps it when it can (rules.windowHint).
	WindowFrom int `json:"window_from,omitempty"`
}

// collect saves a value under name, replacing an earlier one.
func (c *Carry) collect(name string, value json.RawMessage) {
	for i := range c.Collected {
		if c.Collected[i].Name == name {
			c.Collected = append(c.Collected[:i], c.Collected[i+1:]...)
			break
		}
	}
	c.Collected = append(c.Collected, Collected{Name: name, Value: value})
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

func (c *Carry) recordTurn(ti TurnInfo) {
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
