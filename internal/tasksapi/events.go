package tasksapi

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/sse"
)

// GET /v1/runs/{id}/events: a run's events as server-sent events, every
// turn (follow-ups included, one done each), after Last-Event-ID or from
// the start, then live, until an error event or the run's end.

const eventsPath = "/v1/runs/{id}/events"

type eventsIn struct {
	ID          string `path:"id" pattern:"^run-[a-z2-7]{26}$" doc:"The run's ID (X-Request-Id of its answer)"`
	LastEventID int64  `header:"Last-Event-ID" minimum:"0" doc:"The id of the last event read: the stream goes on after it. Ids only grow in a run's life, with gaps"`
	Events      string `query:"events" enum:"all" doc:"all: every event of the run (StreamEventAll: tool calls, their results, withdrawn answers), not only text, done and error"`
	Accept      string `header:"Accept" doc:"text/event-stream; events=all asks for every event too, for clients that set no query"`
	// hctx is the request, kept by Resolve for what sse.Register's handler
	// cannot do with its context.Context and Sender: refuse with a problem
	// document before the first event, set the stream's other headers,
	// write keep-alive comments.
	hctx huma.Context
}

// Resolve keeps the request (huma.Resolver; it refuses nothing).
func (in *eventsIn) Resolve(ctx huma.Context) []error {
	in.hctx = ctx
	return nil
}

// streamEvents are the events of a stream by name, for sse.Register: one
// unnamed kind ("message" is sent without an `event:` line), whose data
// StreamEvent says which event it is.
var streamEvents = map[string]any{"message": StreamEvent{}}

func (s *server) registerEvents() {
	o := op("getRunEvents", http.MethodGet, eventsPath, PermView,
		"A run's events as server-sent events, from Last-Event-ID on", http.StatusOK, http.StatusNotFound, http.StatusServiceUnavailable)
	o.Responses = map[string]*huma.Response{"200": {Description: "Server-sent events of every turn of the run: text, then done (one per turn) or error, each with its id; comment lines keep the connection open. A turn's answer cut short by a model call tried again is followed on the same stream by its next answer, whole, its events' attempt higher: drop the text shown of the turn. The stream ends after an error or once the run has ended; one that ends otherwise was cut off: reconnect with Last-Event-ID. With events=all, every event of the run instead, each a StreamEventAll: tool calls asked for and their results, text marked wrapped, and attempt.retracted where an answer was cut short (drop its text and tool calls)."}}
	// The full vocabulary's events travel in the same unnamed kind: a
	// component of their own, which the description names.
	s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeOf(StreamEventAll{}), true, "")
	sse.Register(s.api, o, streamEvents, func(ctx context.Context, in *eventsIn, send sse.Sender) {
		model, err := s.followable(ctx, in.ID)
		if err != nil {
			s.refuseStream(in.hctx, err)
			return
		}
		s.serve(ctx, openStream(in.hctx, send), relay{runID: in.ID, model: model, after: in.LastEventID, untilClosed: true,
			all: in.Events == "all" || acceptsAll(in.Accept)})
	})
}

// acceptsAll reports whether an Accept header asks for every event:
// text/event-stream with the parameter events=all.
func acceptsAll(accept string) bool {
	for _, r := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(r))
		if err == nil && mt == "text/event-stream" && params["events"] == "all" {
			return true
		}
	}
	return false
}

// followable checks that the run's events may be read, and returns its
// model.
func (s *server) followable(ctx context.Context, id string) (string, error) {
	if s.cfg.Broker == nil {
		return "", problem(CodeValidationFailed, "this API has no broker, so runs are not streamed (AGENT_NATS_URL); read a run's answers with GET /v1/runs/{id}/messages", "")
	}
	task, err := s.ownRun(ctx, id)
	if err != nil {
		return "", err
	}
	if p := s.streamingOff(); p != nil {
		return "", p
	}
	return s.runModel(ctx, id, task)
}

// refuseStream answers a refused stream with its problem document as huma
// answers an error a handler returns (sse.Register's handler returns none).
func (s *server) refuseStream(hctx huma.Context, err error) {
	var p *Problem
	if !errors.As(err, &p) {
		p = problem(CodeInternal, err.Error(), "")
	}
	ct := p.ContentType("")
	hctx.SetHeader("Content-Type", ct)
	hctx.SetStatus(p.Status)
	_ = s.api.Marshal(hctx.BodyWriter(), ct, p)
}

// streamingOff is the answer to a stream asked for while the API's broker
// is away (503 streaming_unavailable), or nil while streaming is on. The
// broker is optional at run time: runs without stream go on meanwhile.
func (s *server) streamingOff() *Problem {
	if s.cfg.Broker == nil || s.cfg.Broker.Up() {
		return nil
	}
	return problem(CodeStreamingUnavailable, fmt.Sprintf("streaming is off: the broker at %s is unreachable; retry in a moment, or run without stream (GET /v1/runs/{id}/messages reads a run's answers)", s.cfg.Broker.URL()), "")
}

// runModel is a run's catalogue model, from its memo.
func (s *server) runModel(ctx context.Context, id, task string) (string, error) {
	d, err := s.cfg.Store.C.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return "", problem(CodeInternal, err.Error(), "")
	}
	return s.memoString(d, memoModel), nil
}

// describeRunAnswer lists both answers of a run: JSON, or with
// "stream": true the events sse.Register described for GET
// /v1/runs/{id}/events (registered first).
func describeRunAnswer(api huma.API, o *huma.Operation) {
	events := api.OpenAPI().Paths[eventsPath].Get.Responses["200"].Content["text/event-stream"]
	o.Responses = map[string]*huma.Response{"200": {Description: "The answer; with \"stream\": true, server-sent events: text, then done or error",
		Content: map[string]*huma.MediaType{
			"text/event-stream": events,
			"application/json":  {Schema: api.OpenAPI().Components.Schemas.Schema(reflect.TypeOf(runAnswerBody{}), true, "RunAnswerBody")},
		}}}
}
