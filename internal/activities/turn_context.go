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
// it again (rules version 13, issue 22 item 4). A worker that has not seen
// it reads it from the task itself (QueryTurnContext): the workflow keeps
// it, so nothing is stored elsewhere and nothing is lost with a worker.
type TurnContext struct {
	Transcript  TranscriptKey      `json:"transcript"`
	Agent       contract.AgentSpec `json:"agent"`
	AgentRef    *StashRef          `json:"agent_ref,omitempty"`
	Variables   map[string]string  `json:"variables,omitempty"`
	Secrets     []string           `json:"secrets,omitempty"`
	Builtins    bool               `json:"builtins,omitempty"`
	MCPTools    []MCPTool          `json:"mcp_tools,omitempty"`
	TaskID      string             `json:"task_id,omitempty"`
	OwnFrom     int                `json:"own_from,omitempty"`
	Stream      bool               `json:"stream,omitempty"`
	LargeValues *LargeValues       `json:"large_values,omitempty"`
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

// TurnContext is the part of the call its run shares.
func (in ModelTurnInput) TurnContext() TurnContext {
	return TurnContext{Transcript: in.Transcript, Agent: in.Agent, AgentRef: in.AgentRef, Variables: in.Variables,
		Secrets: in.Secrets, Builtins: in.Builtins, MCPTools: in.MCPTools, TaskID: in.TaskID, OwnFrom: in.OwnFrom,
		Stream: in.Stream, LargeValues: in.LargeValues}
}

// ByReference leaves only the context's digest in the call: the worker
// fills it back in (resolveContext).
func (in *ModelTurnInput) ByReference(digest string) {
	*in = ModelTurnInput{Turn: in.Turn, Entries: in.Entries, End: in.End, TurnFrom: in.TurnFrom, Scratch: in.Scratch,
		Recall: in.Recall, Budget: in.Budget, WindowFrom: in.WindowFrom, Retry: in.Retry, Context: digest}
}

// WithContext is in with c's fields filled in.
func (in ModelTurnInput) WithContext(c TurnContext) ModelTurnInput {
	in.Transcript, in.Agent, in.AgentRef, in.Variables, in.Secrets = c.Transcript, c.Agent, c.AgentRef, c.Variables, c.Secrets
	in.Builtins, in.MCPTools, in.TaskID, in.OwnFrom, in.Stream, in.LargeValues = c.Builtins, c.MCPTools, c.TaskID, c.OwnFrom, c.Stream, c.LargeValues
	return in
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
// another build may encode the struct differently. A call that
// names none is returned as it is (older histories).
func (a *Activities) resolveContext(ctx context.Context, in ModelTurnInput) (ModelTurnInput, error) {
	if in.Context == "" {
		return in, nil
	}
	wf := activity.GetInfo(ctx).WorkflowExecution
	key := wf.ID + "\x00" + in.Context
	cache := a.contexts.cache()
	if in.Transcript.TaskID != "" { // sent whole: the run's first call, or a changed context
		cache.Set(key, in.TurnContext())
		return in, nil
	}
	if c, ok := cache.GetIfPresent(key); ok {
		return in.WithContext(c), nil
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
	return in.WithContext(c), nil
}
