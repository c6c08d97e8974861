package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
)

// Large state goes by reference (rules.carryByRef, agentByRef, savedByRef).
// Whatever the caller sends (an agent spec of a megabyte, 256 KiB of
// variables, a full queue), no activity argument and no continue-as-new
// argument grows with it:
//
//   - an agent spec over agentInlineBytes is stored once in the stash, in
//     parts, and model calls and arrival checks get its reference;
//   - a continue-as-new argument over carryInlineBytes is stored in the
//     stash the same way, and the next run starts from its reference
//     (StartArgs carryRef), reading it back before anything else. So a
//     task whose state is large still continues as new when Temporal
//     suggests it: it is never postponed.
const (
	agentInlineBytes = 32 << 10
	carryInlineBytes = 256 << 10
)

// stashOptions wait out a storage outage: a stash that cannot be written or
// read yet is retried, never turned into a failed task. A part that does
// not exist is final (INTERNAL).
var stashOptions = workflow.ActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		NonRetryableErrorTypes: []string{contract.ErrInternal}},
}

// stash stores data in parts under name beside the task's transcript (key),
// the parts' puts running side by side.
func stash(ctx workflow.Context, key activities.TranscriptKey, name string, data []byte) (activities.StashRef, error) {
	ref, parts := activities.SplitStash(key, name, data)
	actx := workflow.WithActivityOptions(ctx, stashOptions)
	futures := make([]workflow.Future, len(parts))
	for i, p := range parts {
		o := stashOptions
		o.Summary = fmt.Sprintf("stash %s part %d of %d", name, i+1, len(parts))
		futures[i] = workflow.ExecuteActivity(workflow.WithActivityOptions(actx, o), activities.StashPutName,
			activities.StashPutInput{Transcript: ref.Transcript, Name: ref.PartName(i), Data: p})
	}
	for _, f := range futures {
		if err := f.Get(ctx, nil); err != nil {
			return ref, unwrapActivityError(err)
		}
	}
	return ref, nil
}

// unstash reads back what stash stored and checks it against ref.
func unstash(ctx workflow.Context, ref activities.StashRef) ([]byte, error) {
	futures := make([]workflow.Future, ref.Parts)
	for i := range futures {
		o := stashOptions
		o.Summary = fmt.Sprintf("read %s part %d of %d", ref.Name, i+1, ref.Parts)
		futures[i] = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, o), activities.StashGetName,
			activities.StashGetInput{Transcript: ref.Transcript, Name: ref.PartName(i)})
	}
	parts := make([]string, ref.Parts)
	for i, f := range futures {
		if err := f.Get(ctx, &parts[i]); err != nil {
			return nil, unwrapActivityError(err)
		}
	}
	data, err := activities.JoinStash(ref, parts)
	if err != nil {
		return nil, &contract.Error{Type: contract.ErrInternal, Message: err.Error()}
	}
	return data, nil
}

// stashAgent stores a large agent spec once per task (byRef:
// rules.agentByRef), so calls carry its reference instead (agentRef).
func stashAgent(ctx workflow.Context, c *Carry, agent contract.AgentSpec, byRef bool) error {
	if !byRef || c.AgentRef != nil {
		return nil
	}
	data, _ := json.Marshal(agent)
	if len(data) <= agentInlineBytes {
		return nil
	}
	sum := sha256.Sum256(data)
	ref, err := stash(ctx, c.transcriptKey(), "agent-"+hex.EncodeToString(sum[:8]), data)
	if err != nil {
		return err
	}
	c.AgentRef = &ref
	return nil
}

// agentForCall is the agent spec an activity argument carries: the spec
// (agent) itself, or (stored) an empty spec and its reference.
func (r *stashRecord) agentForCall(agent contract.AgentSpec) (contract.AgentSpec, *activities.StashRef) {
	if r.AgentRef != nil {
		return contract.AgentSpec{}, r.AgentRef
	}
	return agent, nil
}

// restoreStashed reads the state a previous run stored by reference and
// sets this run up from it, as begin does from an inline carry.
func (t *task) restoreStashed(ctx workflow.Context) error {
	ref := t.opening.restoreRef()
	data, err := unstash(ctx, ref)
	if err != nil {
		return err
	}
	args, agent, err := checkStartJSON(data, t.rules)
	if err != nil {
		return &contract.Error{Type: contract.ErrInternal, Message: fmt.Sprintf("the state stored as %q: %v", ref.Name, err)}
	}
	if args.Carry == nil || args.CarryRef != nil {
		return &contract.Error{Type: contract.ErrInternal, Message: fmt.Sprintf("the state stored as %q holds no carry", ref.Name)}
	}
	t.resumeFrom(ctx, args, agent)
	t.opening.restored()
	return nil
}

// continueByReference is the continue-as-new argument for next: next itself
// when small, else a reference to it in the stash. Storing takes activities,
// during which inputs may arrive; the caller drains and builds next again
// and calls this again until what was stored is what would be carried.
func (t *task) continueByReference(ctx workflow.Context, next StartArgs) (*StartArgs, error) {
	data, _ := json.Marshal(next)
	if !t.rules.carryByRef || len(data) <= carryInlineBytes {
		return &next, nil
	}
	if ref := t.continuing.storedAs(data); ref != nil {
		return &StartArgs{CarryRef: ref}, nil
	}
	ref, err := stash(ctx, t.durable.transcriptKey(), t.continuing.nextStore(t.durable.run()), data)
	if err != nil {
		return nil, err
	}
	t.continuing.store(ref, data)
	t.logger.Info("state stored for continue-as-new", "bytes", len(data), "parts", ref.Parts)
	return nil, nil // drain and build again: inputs may have arrived meanwhile
}

// errRestoring answers a query that cannot be answered before the state
// is read back.
var errRestoring = fmt.Errorf("the task is reading its state back after continuing as new (a moment); query again")

// stashRecord is the carried part of large state kept by reference.
type stashRecord struct {
	// AgentRef names the agent spec in the stash once it was stored there
	// (rules.agentByRef): calls carry the reference.
	AgentRef *activities.StashRef `json:"agent_ref,omitempty"`
}
