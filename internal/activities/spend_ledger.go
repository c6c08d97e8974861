package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/transcript"
)

// The spend ledger keeps a budget whole across a call's attempts. An
// attempt whose request the provider answered (and billed) may still fail
// afterwards, or its worker may die in the middle of the request; the retry
// then asks again, and only the attempt that succeeds returns a usage for
// the workflow to charge. So each attempt of a call under a budget records
// beside the transcript, before every request, what the call has spent so
// far and the request's worst case, and after the answer what it used. A
// later attempt starts from the last record: what the earlier attempts
// used, plus the worst case of a request that was sent and never answered
// (what the provider billed for it is unknown, and a budget must not count
// less than was spent). Only tasks with a budget pay for the records.

// spendRecord is a call's spending when its attempt wrote it.
type spendRecord struct {
	Used  contract.Spend `json:"used"`
	Usage Usage          `json:"usage"`
	// InFlight is the worst case of a request sent and not yet answered.
	InFlight contract.Spend `json:"in_flight"`
}

// spendBook is where one attempt of a call keeps its record.
type spendBook struct {
	tr       Transcript
	key      TranscriptKey
	call     string
	activity string // the activity's ID: one per execution of the call
	attempt  int
}

// maxLedgerLookback bounds how many earlier attempts a call looks through
// for the last record. Every attempt after the first writes one when it
// starts, so only attempts that ended before that (a worker killed at once)
// leave a gap.
const maxLedgerLookback = 100

// spendName names an attempt's record: by the activity's ID too, unique
// per execution, since a call the budget refused is made again under the
// same call ID after a raise, and must not read the refused execution's
// record. legacySpendName is the name before it (an attempt that ran on an
// older worker).
func spendName(call, activityID string, attempt int) string {
	return fmt.Sprintf("spent-%s-a%s-attempt-%d", call, activityID, attempt)
}

func legacySpendName(call string, attempt int) string {
	return fmt.Sprintf("spent-%s-attempt-%d", call, attempt)
}

// openSpendBook is the ledger of this attempt: nil for a call that names no
// call ID or transcript (older arguments, activity tests without one).
func (a *Activities) openSpendBook(ctx context.Context, key *TranscriptKey, r Retry) *spendBook {
	if a.Transcript == nil || key == nil || key.TaskID == "" || r.Call == "" || !activity.IsActivity(ctx) {
		return nil
	}
	info := activity.GetInfo(ctx)
	return &spendBook{tr: a.Transcript, key: *key, call: r.Call, activity: info.ActivityID, attempt: int(info.Attempt)}
}

// carried is what the call's earlier attempts spent, by their last record,
// and is written as this attempt's first record.
func (b *spendBook) carried(ctx context.Context) (spendRecord, error) {
	var last spendRecord
	if b == nil || b.attempt <= 1 {
		return last, nil
	}
	for n := b.attempt - 1; n >= 1 && n >= b.attempt-maxLedgerLookback; n-- {
		err := b.tr.GetLatest(ctx, b.key, spendName(b.call, b.activity, n), &last)
		if errors.Is(err, transcript.ErrNotFound) {
			err = b.tr.GetLatest(ctx, b.key, legacySpendName(b.call, n), &last) // written by an older worker
		}
		if errors.Is(err, transcript.ErrNotFound) {
			continue
		}
		if err != nil {
			return spendRecord{}, fmt.Errorf("reading what earlier attempts spent: %w", err)
		}
		break
	}
	carried := spendRecord{Used: last.Used.Plus(last.InFlight), Usage: last.Usage.plusSpend(last.InFlight)}
	return carried, b.write(ctx, carried)
}

func (b *spendBook) write(ctx context.Context, r spendRecord) error {
	if b == nil {
		return nil
	}
	if err := b.tr.PutLatest(ctx, b.key, spendName(b.call, b.activity, b.attempt), r); err != nil {
		return fmt.Errorf("recording what the call spent: %w", err)
	}
	return nil
}

// plusSpend is u with a request's worst case counted as used.
func (u Usage) plusSpend(s contract.Spend) Usage {
	u.InputTokens += int(s.InputTokens)
	u.OutputTokens += int(s.OutputTokens)
	u.Units += s.Units
	return u
}

// plusCarried is a result's usage with what earlier attempts spent.
// Their units are not: the guard counts them (budgetGuard.settleTurn).
func (u Usage) plusCarried(c Usage) Usage {
	u.Usage = u.Add(c.Usage)
	return u
}
