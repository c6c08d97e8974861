package tasksapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"
	"go.temporal.io/api/serviceerror"

	"github.com/agenttask/agenttask/internal/cleanup"
)

// DELETE /v1/runs/{id}: the run and everything it owns go (its executions,
// transcript, stashed state, files, streamed events, its sub-tasks), through
// the DeleteTask workflow on the runtime's queue, whose worker has the
// storage. It needs the call permission, as starting and cancelling runs
// do: whoever may run tasks may delete their runs.

// deleteOut writes itself: 204 with no body, 200 with keptBody, or 202
// with deletingBody (described by hand in registerDelete).
type deleteOut struct {
	Body func(huma.Context)
}

type deletingBody struct {
	Data struct {
		Deleting bool `json:"deleting" doc:"The deletion goes on (it is durable); DELETE again to wait for it"`
	} `json:"data"`
}

// keptBody answers the deletion of a run that a live task continues (a
// resume or rescue of it): the run is deleted, and the part of its
// conversation the continuation reads stays until the continuation goes.
type keptBody struct {
	Data struct {
		Deleted bool         `json:"deleted" doc:"Always true: the run is deleted (its executions, files, stashed state, streamed events and every read of it)"`
		Kept    []keptRecord `json:"kept" doc:"The transcripts of the run that stay because a live continuation reads them"`
	} `json:"data"`
}

type keptRecord struct {
	TaskID     string          `json:"taskId" doc:"The deleted run (or one of its sub-tasks)"`
	FirstRunID string          `json:"firstRunId" doc:"The chain of runs whose transcript this is"`
	Entries    int             `json:"entries" doc:"How many conversation entries stay"`
	For        []keptForRecord `json:"for" doc:"The live continuations that read them; the entries go when the last of these is deleted or expires"`
}

type keptForRecord struct {
	TaskID     string `json:"taskId" doc:"The continuation (a resumed or rescued task)"`
	FirstRunID string `json:"firstRunId"`
	From       int    `json:"from" doc:"The continuation reads the entries below this position from the deleted run"`
}

func (s *server) registerDelete() {
	o := op("deleteRun", http.MethodDelete, "/v1/runs/{id}", PermCall,
		"Delete a run and everything it owns (its sub-tasks too)", http.StatusNoContent, http.StatusNotFound)
	o.Description = "Answers 204 once the run's executions, transcript, stashed state, files and streamed events are gone, " +
		"200 when they are gone but entries of its conversation stay because a live task continues it (a resume or rescue: it reads them; " +
		"the body names it, and the entries go when it does), " +
		"202 when that takes longer than the API's run timeout (the deletion goes on; DELETE again to wait for it), " +
		"and 404 run_not_found when there is nothing of the run (an unknown run, or one deleted before)."
	o.Responses = map[string]*huma.Response{
		"200": {Description: "Deleted; entries a live continuation reads stay", Content: map[string]*huma.MediaType{"application/json": {Schema: s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeOf(keptBody{}), true, "")}}},
		"202": {Description: "Still deleting; Location is the run", Headers: map[string]*huma.Param{"Location": {Schema: &huma.Schema{Type: "string"}}}, Content: map[string]*huma.MediaType{"application/json": {Schema: s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeOf(deletingBody{}), true, "")}}},
		"204": {Description: "Deleted"},
	}
	huma.Register(s.api, o, s.deleteRun)
}

// deleteRun starts (or joins) the run's DeleteTask and waits for it,
// bounded by the run timeout. A run Temporal no longer has (its history
// removed by retention) is deleted all the same: its objects may remain.
func (s *server) deleteRun(ctx context.Context, in *runIDIn) (*deleteOut, error) {
	if err := s.deletable(ctx, in.ID); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.RunTimeout)
	defer cancel()
	run, err := cleanup.StartDelete(rctx, s.cfg.Store.C, s.cfg.TaskQueue, in.ID)
	if err != nil {
		return nil, problem(CodeInternal, "starting the deletion: "+err.Error(), "")
	}
	var res cleanup.DeleteResult
	err = run.Get(rctx, &res)
	var late *serviceerror.DeadlineExceeded // the server's long poll ran into the deadline first
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &late) || rctx.Err() != nil {
		var body deletingBody
		body.Data.Deleting = true
		return &deleteOut{Body: func(hctx huma.Context) {
			hctx.SetHeader("Content-Type", "application/json")
			hctx.SetHeader("Location", "/v1/runs/"+in.ID)
			hctx.SetStatus(http.StatusAccepted)
			_ = json.NewEncoder(hctx.BodyWriter()).Encode(body)
		}}, nil
	}
	if err != nil {
		return nil, problem(CodeInternal, "deleting the run: "+err.Error(), "")
	}
	if !res.Found() {
		return nil, problem(CodeRunNotFound, fmt.Sprintf("no run %s (nothing of it is stored)", in.ID), "")
	}
	if len(res.Kept) > 0 {
		var body keptBody
		body.Data.Deleted = true
		for _, k := range res.Kept {
			r := keptRecord{TaskID: k.TaskID, FirstRunID: k.FirstRunID, Entries: k.Entries, For: []keptForRecord{}}
			for _, c := range k.For {
				r.For = append(r.For, keptForRecord{TaskID: c.TaskID, FirstRunID: c.FirstRunID, From: c.From})
			}
			body.Data.Kept = append(body.Data.Kept, r)
		}
		return &deleteOut{Body: func(hctx huma.Context) {
			hctx.SetHeader("Content-Type", "application/json")
			hctx.SetStatus(http.StatusOK)
			_ = json.NewEncoder(hctx.BodyWriter()).Encode(body)
		}}, nil
	}
	return &deleteOut{Body: func(hctx huma.Context) { hctx.SetStatus(http.StatusNoContent) }}, nil
}

// deletable refuses a workflow this API did not start; a run Temporal
// does not know passes (the deletion finds what storage still holds).
func (s *server) deletable(ctx context.Context, id string) error {
	d, err := s.cfg.Store.C.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return problem(CodeInternal, err.Error(), "")
	}
	if s.memoString(d, memoTask) == "" {
		return problem(CodeRunNotFound, fmt.Sprintf("no run %s was started by this API", id), "")
	}
	return nil
}
