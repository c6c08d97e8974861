package workflows

import (
	"encoding/json"
	"strings"
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
	d, a, err := r.decodeDecide(jsonArgument(t, contract.DecideArgs{ID: "t1.c1", Approve: &yes, By: "amina"}), true)
	require.NoError(t, err)
	require.Same(t, &r.Approvals[0], a)
	require.Equal(t, "amina", d.By)

	_, _, err = r.decodeDecide(jsonArgument(t, contract.DecideArgs{ID: "t7.c1", Approve: &yes}), true)
	require.Equal(t, contract.ErrApprovalNotFound, contract.TypeOf(err))
	_, _, err = r.decodeDecide(jsonArgument(t, contract.DecideArgs{ID: "t1.c2", Approve: &yes}), true)
	require.Equal(t, contract.ErrApprovalDecided, contract.TypeOf(err))
	require.Contains(t, err.Error(), "was denied")
	_, _, err = r.decodeDecide(jsonArgument(t, contract.DecideArgs{ID: "t1.c1"}), true)
	require.Equal(t, contract.ErrInvalidInput, contract.TypeOf(err), "approve is required")
}

// A client capability's call is approved with its client's result, and
// only its call takes one (rules.clientTools); the result is bounded, and a
// refusal carries none. Before those rules a result was not read.
func TestAClientCallIsApprovedWithItsResult(t *testing.T) {
	r := &approvalsRecord{Approvals: []approvalRecord{
		{Approval: contract.Approval{ID: "t1.c1", Capability: "locate", CallID: "call_1", Client: true}},
		{Approval: contract.Approval{ID: "t1.c2", Capability: "pay"}},
	}}
	yes, no := true, false
	result := func(s string) *string { return &s }
	d, a, err := r.decodeDecide(jsonArgument(t, contract.DecideArgs{ID: "t1.c1", Approve: &yes, Result: result(`{"city":"Lyon"}`)}), true)
	require.NoError(t, err)
	require.Same(t, &r.Approvals[0], a)
	require.Equal(t, `{"city":"Lyon"}`, *d.Result)

	for _, c := range []struct {
		args contract.DecideArgs
		want string
	}{
		{contract.DecideArgs{ID: "t1.c1", Approve: &yes}, `approve it with its "result"`},
		{contract.DecideArgs{ID: "t1.c2", Approve: &yes, Result: result("x")}, `leave result out`},
		{contract.DecideArgs{ID: "t1.c1", Approve: &no, Result: result("x")}, `a refused call has no result`},
		{contract.DecideArgs{ID: "t1.c1", Approve: &yes, Result: result(strings.Repeat("x", contract.MaxClientResultBytes+1))}, "at most 65536"},
	} {
		_, _, err := r.decodeDecide(jsonArgument(t, c.args), true)
		require.Equal(t, contract.ErrInvalidInput, contract.TypeOf(err), "%+v", c.args)
		require.Contains(t, err.Error(), c.want)
	}
	_, _, err = r.decodeDecide(jsonArgument(t, contract.DecideArgs{ID: "t1.c1", Approve: &no, Reason: "the user closed the dialog"}), true)
	require.NoError(t, err, "a client's call may be refused")
	_, _, err = r.decodeDecide(jsonArgument(t, contract.DecideArgs{ID: "t1.c2", Approve: &yes, Result: result("x")}), false)
	require.NoError(t, err, "older rules did not read result")

	require.Contains(t, r.approvalLines(), "awaiting the client's result **t1.c1** · `locate`")
	a.Decision = &contract.Decision{Reason: contract.ReasonApprovalTimedOut}
	require.Equal(t, `error: the client did not run this call of "locate" (approval timed out)`, deniedResult(a))
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
