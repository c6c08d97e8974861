package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/maypok86/otter/v2"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
)

// QueryTurnContext is the query a ModelTurn attempt reads its run's turn
// context with, when its worker has not seen it (arg: the context's digest;
// returns TurnContext). Names are API: add, never rename.
const QueryTurnContext = "turn-context"

// TurnContext is what every model call of a run shares: the transcript, the
// agent, its variables and the run's switches. A run sends it with its first
// call (and again whenever it changes), and every other call names it by
// digest only (ModelTurnInput.Context), so a turn's history does not carry
// it again (rules version 13). A worker that has not seen
// it reads it from the task itself (QueryTurnContext): the workflow keeps
// it, so nothing is stored elsewhere and nothing is lost with a worker.
type TurnContext struct {
	Transcript TranscriptKey      `json:"transcript"`
	Agent      contract.AgentSpec `json:"agent"`
	// AgentRef, when set, names the agent spec in the stash and Agent is
	// empty: a large spec is stored once, not carried by every call.
	AgentRef *StashRef `json:"agent_ref,omitempty"`
	// Variables fill {{name}} in the instructions; secrets are not here,
	// only their names (their placeholders read "[secret]").
	Variables map[string]string `json:"variables,omitempty"`
	Secrets   []string          `json:"secrets,omitempty"`
	// Builtins offers the built-in save and finish capabilities.
	Builtins bool `json:"builtins,omitempty"`
	// MCPTools are the tools the run listed for the agent's mcp
	// capabilities (ListMCPTools), each offered when its capability's
	// condition holds.
	MCPTools []MCPTool `json:"mcp_tools,omitempty"`
	// TaskID names the task's file space ("" in older arguments: the
	// transcript's task ID, which was the same then).
	TaskID string `json:"task_id,omitempty"`
	// OwnFrom is the first position of this task's own entries; files of
	// earlier entries (a conversation this task continues) are in another
	// task's space, so they are shown as references only.
	OwnFrom int `json:"own_from,omitempty"`
	// Stream publishes the model's text to the broker as it is written
	// (StartArgs stream), under the task ID's subject.
	Stream bool `json:"stream,omitempty"`
	// LargeValues, when set, has the call store saved values over
	// InlineValueBytes in the stash and return references (values.go).
	LargeValues *LargeValues `json:"large_values,omitempty"`
}

// Digest names the context by its content: the first 16 bytes of the
// SHA-256 of its JSON (encoding/json sorts map keys, so the same context
// always has the same digest, in the workflow and in any worker).
func (c TurnContext) Digest() string {
	b, err := json.Marshal(c)
	if err != nil { // only plain data: cannot happen
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// Querier queries a workflow: the worker's Temporal client.
type Querier interface {
	QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error)
}

// turnContexts remembers the contexts this worker has seen, by workflow
// and digest, in otter's bounded cache: an entry is a run's agent and
// switches, and a worker serves thousands of runs.
type turnContexts struct {
	once sync.Once
	c    *otter.Cache[string, TurnContext]
}

const turnContextsBytes = 16 << 20

func (t *turnContexts) cache() *otter.Cache[string, TurnContext] {
	t.once.Do(func() {
		t.c = otter.Must(&otter.Options[string, TurnContext]{
			MaximumWeight: turnContextsBytes,
			Weigher: func(k string, c TurnContext) uint32 {
				return uint32(len(k) + 256 + len(c.Agent.Instructions) + len(c.Agent.Parameters) + len(c.Agent.Exposes) + 64*len(c.Agent.Capabilities) + 128*len(c.MCPTools))
			},
		})
	})
	return t.c
}

// resolveContext fills in the context a call names by digest: sent with
// the call (then remembered), remembered from an earlier call, or read from
// the task (QueryTurnContext), which keeps each by its digest. The digest
// is the workflow's name for it and is not computed again here: a worker of
// another build may encode the struct differently. A call that names none
// carries it whole (older histories); one with neither is refused.
func (a *Activities) resolveContext(ctx context.Context, in ModelTurnInput) (ModelTurnInput, error) {
	if in.Context == "" {
		if in.TurnContext == nil {
			return in, temporal.NewNonRetryableApplicationError("the model call carries neither its turn context nor a digest naming it", contract.ErrInvalidInput, nil)
		}
		return in, nil // older histories: every call whole
	}
	wf := activity.GetInfo(ctx).WorkflowExecution
	key := wf.ID + "\x00" + in.Context
	cache := a.contexts.cache()
	if in.TurnContext != nil { // sent whole: the run's first call, or a changed context
		cache.Set(key, *in.TurnContext)
		return in, nil
	}
	if c, ok := cache.GetIfPresent(key); ok {
		in.TurnContext = &c
		return in, nil
	}
	if a.Queries == nil {
		return in, &contract.Error{Type: contract.ErrInternal, Message: "this worker cannot read a task's turn context: its activities have no Temporal client (Activities.Queries)"}
	}
	v, err := a.Queries.QueryWorkflow(ctx, wf.ID, wf.RunID, QueryTurnContext, in.Context)
	if err != nil {
		return in, fmt.Errorf("reading the turn context %s from the task: %w", in.Context, err) // retried: the task answers once its worker polls
	}
	var c TurnContext
	if err := v.Get(&c); err != nil {
		return in, fmt.Errorf("decoding the turn context %s: %w", in.Context, err)
	}
	if c.Transcript.TaskID == "" {
		return in, fmt.Errorf("the task answered the turn context %s without a transcript", in.Context)
	}
	cache.Set(key, c)
	in.TurnContext = &c
	return in, nil
}
