package workflows

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"github.com/agenttask/agenttask/contract"
)

// jsonArgument is v as a handler receives it: JSON, as the SDKs send it.
func jsonArgument(t *testing.T, v any) converter.RawValue {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	require.NoError(t, err)
	return converter.NewRawValue(p)
}

// The approvals record finds an approval by its ID (the record itself, so
// a decision sticks), counts the ones still pending and lists only those
// for the Web UI.
func TestTheApprovalsRecordFindsCountsAndListsThePendingOnes(t *testing.T) {
	r := &approvalsRecord{Approvals: []approvalRecord{
		{Approval: contract.Approval{ID: "t1.c1", Capability: "pay", Arguments: json.RawMessage(`{"amount":5}`)}, Deadline: "2026-01-02T03:04:05Z"},
		{Approval: contract.Approval{ID: "t1.c2", Capability: "mail", Decision: &contract.Decision{Approve: true}}},
		{Approval: contract.Approval{ID: "t2.c1", Capability: "wire"}},
	}}
	require.Same(t, &r.Approvals[1], r.approval("t1.c2"))
	require.Nil(t, r.approval("t9.c9"))
	require.Equal(t, 2, r.pendingApprovals())

	lines := r.approvalLines()
	require.Contains(t, lines, "awaiting approval **t1.c1** · `pay` · {\"amount\":5} · until 2026-01-02T03:04:05Z")
	require.Contains(t, lines, "awaiting approval **t2.c1** · `wire`")
	require.NotContains(t, lines, "t1.c2", "a decided approval is not shown")
	require.Empty(t, (&approvalsRecord{}).approvalLines())
}

// decide is checked against the record: an approval it does not hold, or
// one already decided, is refused with its own type; a pending one is
// handed back to decide.
func TestADecisionIsCheckedAgainstTheApprovalsRecord(t *testing.T) {
	r := &approvalsRecord{Approvals: []approvalRecord{
		{Approval: contract.Approval{ID: "t1.c1", Capability: "pay"}},
		{Approval: contract.Approval{ID: "t1.c2", Capability: "mail", Decision: &contract.Decision{Approve: false, Reason: "no", DecidedAt: "2026-01-02T03:04:05Z"}}},
	}}
	yes := true
	d, a, err := r.decodeDecide(jsonArgument(t, contract.DecideArgs{ID: "t1.c1", Approve: &yes, By: "amina"}))
	require.NoError(t, err)
	require.Same(t, &r.Approvals[0], a)
	require.Equal(t, "amina", d.By)

	_, _, err = r.decodeDecide(jsonArgument(t, contract.DecideArgs{ID: "t7.c1", Approve: &yes}))
	require.Equal(t, contract.ErrApprovalNotFound, contract.TypeOf(err))
	_, _, err = r.decodeDecide(jsonArgument(t, contract.DecideArgs{ID: "t1.c2", Approve: &yes}))
	require.Equal(t, contract.ErrApprovalDecided, contract.TypeOf(err))
	require.Contains(t, err.Error(), "was denied")
	_, _, err = r.decodeDecide(jsonArgument(t, contract.DecideArgs{ID: "t1.c1"}))
	require.Equal(t, contract.ErrInvalidInput, contract.TypeOf(err), "approve is required")
}

// Each approval's request and decision are streamed once: announce hands
// back only what it did not hand back before, and toAnnounce says a
// decision waits for it.
func TestEachApprovalIsAnnouncedOnce(t *testing.T) {
	r := &approvalsRecord{Approvals: []approvalRecord{
		{Approval: contract.Approval{ID: "t1.c1", Capability: "pay"}},
		{Approval: contract.Approval{ID: "t1.c2", Capability: "mail"}},
	}}
	ids := []string{"t1.c1", "", "t1.c2"}
	require.Len(t, r.announce(ids, false), 2)
	require.Empty(t, r.announce(ids, false), "a request is announced once, also after a continue-as-new carried the record")
	require.False(t, r.toAnnounce(ids))
	require.Empty(t, r.announce(ids, true), "nothing decided yet")
	r.Approvals[1].Decision = &contract.Decision{Approve: true, By: "amina"}
	require.True(t, r.toAnnounce(ids))
	got := r.announce(ids, true)
	require.Len(t, got, 1)
	require.Equal(t, "amina", got[0].Decision.By)
	require.False(t, r.toAnnounce(ids))
	require.Empty(t, r.announce(ids, true))
}
