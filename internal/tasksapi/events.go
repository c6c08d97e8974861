package tasksapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"
)

// GET /v1/runs/{id}/events: a run's events as server-sent events, every
// turn (follow-ups included, one done each), after Last-Event-ID or from
// the start, then live, until an error event or the run's end.

type eventsIn struct {
	ID          string `path:"id" pattern:"^run-[a-z2-7]{26}$" doc:"The run's ID (X-Request-Id of its answer)"`
	LastEventID int64  `header:"Last-Event-ID" minimum:"0" doc:"The id of the last event read: the stream goes on after it"`
}

type eventsOut struct {
	Body func(huma.Context)
}

func (s *server) registerEvents() {
	o := op("getRunEvents", http.MethodGet, "/v1/runs/{id}/events", PermView,
		"A run's events as server-sent events, from Last-Event-ID on", http.StatusOK, http.StatusNotFound, http.StatusServiceUnavailable)
	o.Responses = map[string]*huma.Response{"200": eventStreamResponse(s.api,
		"Server-sent events of every turn of the run: text, then done (one per turn) or error, each with its id; comment lines keep the connection open. The stream ends after an error or once the run has ended.")}
	huma.Register(s.api, o, func(ctx context.Context, in *eventsIn) (*eventsOut, error) {
		if s.cfg.Broker == nil {
			return nil, problem(CodeValidationFailed, "this API has no broker, so runs are not streamed (AGENT_NATS_URL); read a run's answers with GET /v1/runs/{id}/messages", "")
		}
		task, err := s.ownRun(ctx, in.ID)
		if err != nil {
			return nil, err
		}
		if p := s.streamingOff(); p != nil {
			return nil, p
		}
		model, err := s.runModel(ctx, in.ID, task)
		if err != nil {
			return nil, err
		}
		return &eventsOut{Body: func(hctx huma.Context) {
			s.serve(hctx.Context(), newSSE(hctx), relay{runID: in.ID, model: model, after: in.LastEventID, untilClosed: true})
		}}, nil
	})
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
	var model string
	if f := d.GetWorkflowExecutionInfo().GetMemo().GetFields()[memoModel]; f != nil {
		_ = json.Unmarshal(f.GetData(), &model)
	}
	return model, nil
}

// eventStreamResponse describes a 200 of server-sent events whose data are
// StreamEvent objects.
func eventStreamResponse(api huma.API, doc string) *huma.Response {
	api.OpenAPI().Components.Schemas.Schema(reflect.TypeOf(StreamEvent{}), true, "StreamEvent")
	return &huma.Response{Description: doc, Content: map[string]*huma.MediaType{
		"text/event-stream": {Schema: &huma.Schema{Type: "string",
			Description: "Server-sent events: `id: N` and `data: <StreamEvent as JSON>` (#/components/schemas/StreamEvent)"}},
	}}
}

// describeRunAnswer lists both answers of a run: JSON, or events with
// "stream": true.
func describeRunAnswer(api huma.API, o *huma.Operation) {
	r := eventStreamResponse(api, "The answer; with \"stream\": true, server-sent events: text, then done or error")
	r.Content["application/json"] = &huma.MediaType{Schema: api.OpenAPI().Components.Schemas.Schema(reflect.TypeOf(runAnswerBody{}), true, "RunAnswerBody")}
	o.Responses = map[string]*huma.Response{"200": r}
}
