package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/internal/activities"
)

// sharedContexts are the turn contexts this run has sent its model calls
// (rules.contextByRef): what every call of the run shares (transcript,
// agent, variables, switches) goes whole with the first call and again
// when it changes; every other call names it by digest, and a worker that
// has not seen it asks the task (activities.QueryTurnContext). The run
// keeps the few it sent, so any call it made can still be answered; the
// next run sends its own again.
type sharedContexts struct {
	sent   string                            // the digest the last call carried
	byName map[string]activities.TurnContext // at most maxSharedContexts
	order  []string                          // oldest first
}

// maxSharedContexts bounds what a run keeps: its context changes only when
// the run learns something new about every call (its MCP tools, say).
const maxSharedContexts = 4

// shareContext sends in's context whole when the previous call did not carry the
// same one, by digest otherwise.
func (t *task) shareContext(in *activities.ModelTurnInput) {
	c := *in.TurnContext
	d := c.Digest()
	in.Context = d
	if d == t.shared.sent {
		in.TurnContext = nil // the digest alone: the worker fills it in
		return
	}
	t.shared.sent = d
	if _, ok := t.shared.byName[d]; ok {
		return
	}
	if t.shared.byName == nil {
		t.shared.byName = map[string]activities.TurnContext{}
	}
	if len(t.shared.order) == maxSharedContexts {
		delete(t.shared.byName, t.shared.order[0])
		t.shared.order = t.shared.order[1:]
	}
	t.shared.byName[d] = c
	t.shared.order = append(t.shared.order, d)
}

// registerContextQuery installs turn-context: the context a call of this
// run named. A query writes no history, so it needs no version gate.
func (t *task) registerContextQuery(ctx workflow.Context) error {
	return workflow.SetQueryHandler(ctx, activities.QueryTurnContext, func(digest string) (activities.TurnContext, error) {
		c, ok := t.shared.byName[digest]
		if !ok {
			return activities.TurnContext{}, fmt.Errorf("this run sent no model call the turn context %q: a call names only a context its own run sent", digest)
		}
		return c, nil
	})
}
