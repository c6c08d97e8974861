package tasksapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/catalog"
	"github.com/agenttask/agenttask/internal/taskdef"
	"github.com/agenttask/agenttask/starter"
)

// A run is an ordinary AgentTask, started from a snapshot of the task (its
// pinned prompt version filled in) with update-with-start of the ask
// update: one request starts it and gets its answer. It stays a
// conversation for an hour of quiet, so POST /v1/runs/{id}/inputs can follow
// up; it is visible in the Web UI and through the core contract like any task.
//
// A task that takes no input (input.maxBytes 0) runs its filled prompt as
// the one user message (there are no instructions besides).

// memoTask marks a run this API started, naming its task.
const memoTask = "api_task"

// runIdle ends a run nobody has followed up for this long.
const runIdle = "1h"

// RunAnswer is a run's answer (docs/tasks-api.md#the-answer).
type RunAnswer struct {
	Task       string          `json:"task"`
	Model      string          `json:"model" doc:"The model that answered: the provider's name for it, after the catalogue's provider (openai/gpt-4o-mini-2024-07-18)"`
	Text       string          `json:"text"`
	JSON       json.RawMessage `json:"json,omitempty" doc:"Only for a task with JSON answers: the answer parsed, matching the task's schema"`
	StopReason string          `json:"stopReason" enum:"end,max_tokens,refused"`
	Usage      RunUsage        `json:"usage"`
}

// RunUsage is what a run used.
type RunUsage struct {
	InputTokens  int `json:"inputTokens" doc:"Every prompt token, cached ones included"`
	OutputTokens int `json:"outputTokens"`
	// Of InputTokens: read from and written to the provider's prompt cache.
	CacheReadTokens  int   `json:"cacheReadTokens,omitempty" doc:"Of inputTokens, those read from the provider's prompt cache"`
	CacheWriteTokens int   `json:"cacheWriteTokens,omitempty" doc:"Of inputTokens, those written to the provider's prompt cache"`
	Units            int64 `json:"units"`
}

// runUsage is u as the API reports it: priced with model's catalogue
// entry, cached tokens at their prices, when the catalogue has it.
func (s *server) runUsage(model string, u contract.Usage) RunUsage {
	out := RunUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
	if m, ok := s.cfg.Catalog.Get(model); ok {
		out.Units = m.UnitsOf(catalog.Tokens{Input: int64(u.InputTokens), Output: int64(u.OutputTokens),
			CacheRead: int64(u.CacheReadTokens), CacheWrite: int64(u.CacheWriteTokens)})
	}
	return out
}

type runIn struct {
	Name           string `path:"name" pattern:"^[a-z0-9][a-z0-9-]{0,62}$" doc:"The task's name"`
	ContentType    string `header:"Content-Type"`
	Accept         string `header:"Accept" doc:"text/event-stream; events=all asks a streamed run for every event, as the body's events all does"`
	IdempotencyKey string `header:"Idempotency-Key" maxLength:"255" doc:"A repeated request with the same key returns the first run's answer"`
	RawBody        []byte
}

// runOut is a run's answer: {"data": RunAnswer}, or with "stream": true
// server-sent events (stream.go). Its body is written by hand so one
// operation can answer either; the description lists both (describeRunAnswer).
type runOut struct {
	RequestID   string `header:"X-Request-Id" doc:"The run's ID"`
	ProcessedIn string `header:"X-Ai-Processed-In" doc:"The country the run was processed in (ISO 3166-1 alpha-2)"`
	Body        func(huma.Context)
}

// runAnswerBody is the JSON body of a run's answer.
type runAnswerBody struct {
	Data RunAnswer `json:"data"`
}

// RunRequest describes the run body in the OpenAPI description.
type RunRequest struct {
	Input     string            `json:"input,omitempty" doc:"The text to send, up to the task's input size"`
	Variables map[string]string `json:"variables,omitempty" doc:"A value for each variable the task leaves open"`
	History   []HistoryMessage  `json:"history,omitempty" doc:"Earlier messages, oldest first"`
	Stream    bool              `json:"stream,omitempty" doc:"true answers with server-sent events as the answer is written (text, then done or error)"`
	Events    string            `json:"events,omitempty" enum:"all,seed" doc:"An extension of seed 004: with stream, all answers with every event of the run (StreamEventAll: tool calls, approvals, sub-tasks, docs/streaming.md#every-event) up to its first turn's done or error; seed (the default) with text, done and error. Accept: text/event-stream; events=all asks the same"`
	Budget    *contract.Budget  `json:"budget,omitempty" doc:"An extension of seed 004 (docs/budgets.md): the run's budget, in place of the task's"`
}

// HistoryMessage is one earlier message of a run's conversation.
type HistoryMessage struct {
	Role    string `json:"role" enum:"user,assistant"`
	Content string `json:"content"`
}

func (s *server) registerRuns() {
	run := op("runTask", http.MethodPost, "/v1/tasks/{name}/run", PermCall, "Run a task and get its answer", http.StatusOK,
		http.StatusPaymentRequired, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout)
	run.RequestBody = jsonBody(s.api, RunRequest{})
	run.SkipValidateBody = true
	describeRunAnswer(s.api, &run)
	huma.Register(s.api, run, s.runTask)
}

// runTask answers POST /v1/tasks/{name}/run: the request checked against
// its task, the run started with its first ask, then its answer (JSON) or
// its first turn's events ("stream": true).
func (s *server) runTask(ctx context.Context, in *runIn) (*runOut, error) {
	d, req, err := s.runRequest(ctx, in)
	if err != nil {
		return nil, err
	}
	args, input, err := s.runInput(ctx, d, req)
	if err != nil {
		return nil, err
	}
	id, err := s.runID(ctx, d.Name, in.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.RunTimeout)
	h, err := s.startRun(rctx, id, in.IdempotencyKey != "", d, args, input, req.Stream)
	out := &runOut{RequestID: id, ProcessedIn: s.cfg.ProcessedIn}
	if err == nil && req.Stream {
		all := req.Events == taskdef.EventsAll || (req.Events == "" && acceptsAll(in.Accept))
		out.Body = s.streamedAnswer(rctx, cancel, h, relay{runID: id, model: d.Model, json: d.JSON, firstTurn: true, all: all})
		return out, nil
	}
	defer cancel()
	var res contract.AskResult
	if err == nil {
		err = h.Get(rctx, &res)
	}
	if err != nil {
		return nil, s.runFailed(ctx, rctx, id, err)
	}
	answer := runAnswerBody{Data: s.answer(d, res)}
	out.Body = func(hctx huma.Context) {
		hctx.SetHeader("Content-Type", "application/json")
		hctx.SetStatus(http.StatusOK)
		_ = json.NewEncoder(hctx.BodyWriter()).Encode(answer)
	}
	return out, nil
}

// runRequest decodes a run's body and checks it against its task, which
// must be stored and enabled; a stream needs the broker, and its being up.
func (s *server) runRequest(ctx context.Context, in *runIn) (taskdef.Definition, taskdef.RunRequest, error) {
	if err := checkJSON(in.ContentType); err != nil {
		return taskdef.Definition{}, taskdef.RunRequest{}, err
	}
	req, fe := taskdef.DecodeRun(in.RawBody)
	if fe != nil {
		return taskdef.Definition{}, req, invalid(fe.Field, fe.Detail)
	}
	d, err := s.storedDefinition(ctx, in.Name)
	if err != nil {
		return d, req, err
	}
	if d.Enabled != nil && !*d.Enabled {
		return d, req, problem(CodeTaskDisabled, fmt.Sprintf("task %q is disabled; a developer enables it with PUT", d.Name), "")
	}
	if fe := taskdef.CheckRun(d, req); fe != nil {
		return d, req, invalid(fe.Field, fe.Detail)
	}
	if req.Stream && s.cfg.Broker == nil {
		return d, req, invalid("stream", "this API has no broker to stream runs through (AGENT_NATS_URL); leave stream out or set it to false")
	}
	if req.Stream {
		if p := s.streamingOff(); p != nil {
			return d, req, p
		}
	}
	return d, req, nil
}

// storedDefinition is a stored task's definition.
func (s *server) storedDefinition(ctx context.Context, name string) (taskdef.Definition, error) {
	stored, err := s.defs.GetTask(ctx, name)
	if err != nil {
		return taskdef.Definition{}, fromStore(err)
	}
	var st storedTask
	if err := json.Unmarshal(stored.Definition, &st); err != nil {
		return taskdef.Definition{}, problem(CodeInternal, "a stored task does not decode: "+err.Error(), "")
	}
	return st.Definition, nil
}

// runInput is the AgentTask a run starts, its prompt version filled in,
// and the run's first input.
func (s *server) runInput(ctx context.Context, d taskdef.Definition, req taskdef.RunRequest) (contract.StartArgs, contract.TaskIO, error) {
	pv, err := s.defs.GetPromptVersion(ctx, d.Prompt.Name, d.Prompt.Version)
	if err != nil {
		return contract.StartArgs{}, contract.TaskIO{}, fromStore(err)
	}
	args, input, field, over := runArgs(d, taskdef.Prompt(d, pv.Text, req), req)
	if over > 0 {
		// Text past the inline budget is refused, never split
		// (docs/content.md#content-parts).
		return args, input, invalid(field, fmt.Sprintf("%d bytes, over the %d-byte inline budget of one message (text is never split or truncated); send less, or keep the task's prompt and variables shorter", over, contract.MaxInlineTextBytes))
	}
	// Every run's text goes to the broker, /events serves any run: also
	// while the broker is away, so a run's later turns stream once it is
	// back (a worker without it runs the turn unstreamed).
	args.Stream = s.cfg.Broker != nil
	return args, input, nil
}

// startRun starts the run with its first ask (update-with-start). A run
// with an Idempotency-Key finds the run its key started before, if any. A
// streamed run's ask is waited for until accepted: the events tell the rest.
func (s *server) startRun(rctx context.Context, id string, keyed bool, d taskdef.Definition, args contract.StartArgs, input contract.TaskIO, stream bool) (client.WorkflowUpdateHandle, error) {
	policy := enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL
	if keyed {
		policy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING // the same key: the same run, the same answer
	}
	start := client.StartWorkflowOptions{
		ID: id, TaskQueue: s.cfg.TaskQueue, WorkflowIDConflictPolicy: policy,
		Memo: map[string]any{memoTask: d.Name, memoModel: d.Model},
		// Listed by AgentName, AgentModel and AgentState like any task.
		TypedSearchAttributes: starter.SearchAttributes(args.Agent), StaticSummary: starter.Summary(args),
		StaticDetails: starter.Details(args), // the Web UI's Details panel
	}
	stage := client.WorkflowUpdateStageCompleted
	if stream {
		stage = client.WorkflowUpdateStageAccepted
	}
	updateWithStart := func() (client.WorkflowUpdateHandle, error) {
		return s.cfg.Store.C.UpdateWithStartWorkflow(rctx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: s.cfg.Store.C.NewWithStartWorkflowOperation(start, contract.WorkflowType, args),
			UpdateOptions: client.UpdateWorkflowOptions{UpdateID: "run", UpdateName: contract.UpdateAsk, Args: []any{input},
				WaitForStage: stage},
		})
	}
	h, err := updateWithStart()
	if err != nil && starter.SearchAttributesRefused(err) {
		// A plain Temporal server may not have the attributes registered:
		// the run goes the same without them.
		start.TypedSearchAttributes = temporal.SearchAttributes{}
		h, err = updateWithStart()
	}
	return h, err
}

// streamedAnswer is the body of a streamed run: its first turn's events,
// with the ask's outcome beside them (the API ends the turn from it if the
// worker's end never comes). It stops when the client goes away, and ends
// the run's wait (cancel) when done.
func (s *server) streamedAnswer(rctx context.Context, cancel context.CancelFunc, h client.WorkflowUpdateHandle, r relay) func(huma.Context) {
	return func(hctx huma.Context) {
		defer cancel()
		sctx, stop := context.WithCancel(rctx)
		defer stop()
		go func() { // the client went away
			select {
			case <-hctx.Context().Done():
				stop()
			case <-sctx.Done():
			}
		}()
		answered := make(chan askOutcome, 1)
		go func() {
			var o askOutcome
			o.err = h.Get(sctx, &o.res)
			if sctx.Err() == nil && !waitEnded(o.err) {
				answered <- o
			}
		}()
		r.answered = answered
		s.serve(sctx, openStream(hctx, nil), r)
	}
}

// runFailed is the problem of a run that did not answer, with the run's
// headers: run_timeout when the wait ended (not the client's request), or
// what the run's failure maps to.
func (s *server) runFailed(ctx, rctx context.Context, id string, err error) error {
	var p *Problem
	if (rctx.Err() != nil || waitEnded(err)) && ctx.Err() == nil {
		p = problem(CodeRunTimeout, fmt.Sprintf("run %s did not answer within %s; it goes on: read its answer with GET /v1/runs/%s/messages", id, s.cfg.RunTimeout, id), "")
		if s.awaitingBudget(ctx, id) {
			p = problem(CodeRunTimeout, fmt.Sprintf("run %s did not answer within %s: it waits for a budget raise (state awaiting_budget: its next model call may cost more than is left of its budget; GET /v1/runs/%s shows budget.needed). Raise it with POST /v1/runs/%s/budget, then read its answer with GET /v1/runs/%s/messages", id, s.cfg.RunTimeout, id, id, id), "")
		}
	} else {
		p = runProblem(err)
	}
	return huma.ErrorWithHeaders(p, http.Header{"X-Request-Id": {id}, "X-Ai-Processed-In": {s.cfg.ProcessedIn}})
}

// awaitingBudget reports whether run id waits for a budget raise.
func (s *server) awaitingBudget(ctx context.Context, id string) bool {
	var st contract.Status
	return s.query(ctx, id, &st, contract.QueryStatus) == nil && st.State == contract.StateAwaitingBudget
}

// runArgs is the AgentTask a run starts, and its input. A message text
// over the inline budget is reported (its field and size), not split.
func runArgs(d taskdef.Definition, prompt string, req taskdef.RunRequest) (contract.StartArgs, contract.TaskIO, string, int) {
	agent := contract.AgentSpec{Name: d.Name, Model: d.Model, Instructions: prompt, MaxTokens: d.MaxTokens,
		Temperature: d.Temperature, TopP: d.TopP, ReasoningEffort: d.ReasoningEffort, JSON: d.JSON, Schema: d.Schema,
		Capabilities: d.Capabilities}
	text, field := prompt, "variables"
	if req.Input != nil && *req.Input != "" {
		text, field = *req.Input, "input"
	} else {
		agent.Instructions = "" // no input: the prompt is the message
	}
	args := contract.StartArgs{Agent: agent, Mode: contract.ModeConversation, IdleTimeout: runIdle, Budget: d.Budget}
	if req.Budget != nil {
		args.Budget = req.Budget // the run's own, in place of the task's
	}
	for _, m := range req.History {
		args.History = append(args.History, contract.HistoryMessage{Role: m.Role, Content: m.Content})
	}
	if len(text) > contract.MaxInlineTextBytes {
		return args, contract.TaskIO{}, field, len(text)
	}
	return args, contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(text)}}, "", 0
}

// runID names a run: random, or derived from the caller's key, the task and
// the Idempotency-Key so a repeated request finds the first run.
func (s *server) runID(ctx context.Context, task, idempotencyKey string) (string, error) {
	var b []byte
	if idempotencyKey != "" {
		sum := sha256.Sum256([]byte(caller(ctx) + "\x00" + task + "\x00" + idempotencyKey))
		b = sum[:16]
	} else {
		b = make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return "", problem(CodeInternal, "no randomness for a run ID", "")
		}
	}
	return "run-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)), nil
}

// answer is the seed's answer of a run from the ask reply.
func (s *server) answer(d taskdef.Definition, res contract.AskResult) RunAnswer {
	a := RunAnswer{Task: d.Name, Model: answeredModel(d.Model, res.Turn.Model), Text: contract.TextOf(res.Output), StopReason: res.Turn.StopReason,
		Usage: s.runUsage(d.Model, res.Turn.Usage)}
	if a.StopReason == "" {
		a.StopReason = "end"
	}
	if t := strings.TrimSpace(a.Text); d.JSON && json.Valid([]byte(t)) {
		a.JSON = json.RawMessage(t)
	}
	return a
}

// answeredModel is the model that answered (docs/tasks-api.md#the-answer):
// the name the provider gave in its answer (the model activity's result, the
// turn's model), under the catalogue entry's provider, so
// "openai/gpt-4o-mini" answered by gpt-4o-mini-2024-07-18 reads
// "openai/gpt-4o-mini-2024-07-18". A turn that names none (a history of
// before, a provider that says nothing) is the catalogue's name. Units stay
// at the catalogue entry's prices: it is what the task booked.
func answeredModel(catalogName, answered string) string {
	if answered == "" {
		return catalogName
	}
	provider, _, _ := strings.Cut(catalogName, "/")
	return provider + "/" + answered
}
