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

// share sends in's context whole when the previous call did not carry the
// same one, by digest otherwise.
func (s *sharedContexts) share(in *activities.ModelTurnInput) {
	c := *in.TurnContext
	d := c.Digest()
	in.Context = d
	if d == s.sent {
		in.TurnContext = nil // the digest alone: the worker fills it in
		return
	}
	s.sent = d
	if _, ok := s.byName[d]; ok {
		return
	}
	if s.byName == nil {
		s.byName = map[string]activities.TurnContext{}
	}
	if len(s.order) == maxSharedContexts {
		delete(s.byName, s.order[0])
		s.order = s.order[1:]
	}
	s.byName[d] = c
	s.order = append(s.order, d)
}

// named is the context a call of this run named by its digest.
func (s *sharedContexts) named(digest string) (activities.TurnContext, bool) {
	c, ok := s.byName[digest]
	return c, ok
}

// registerContextQuery installs turn-context: the context a call of this
// run named. A query writes no history, so it needs no version gate.
func registerContextQuery(ctx workflow.Context, shared *sharedContexts) error {
	return workflow.SetQueryHandler(ctx, activities.QueryTurnContext, func(digest string) (activities.TurnContext, error) {
		c, ok := shared.named(digest)
		if !ok {
			return activities.TurnContext{}, fmt.Errorf("this run sent no model call the turn context %q: a call names only a context its own run sent", digest)
		}
		return c, nil
	})
}
