package tasksapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/taskdef"
	"github.com/agenttask/agenttask/internal/workflows"
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

// RunAnswer is a run's answer (seed 004).
type RunAnswer struct {
	Task       string          `json:"task"`
	Model      string          `json:"model"`
	Text       string          `json:"text"`
	JSON       json.RawMessage `json:"json,omitempty" doc:"Only for a task with JSON answers: the answer parsed, matching the task's schema"`
	StopReason string          `json:"stopReason" enum:"end,max_tokens,refused"`
	Usage      RunUsage        `json:"usage"`
}

// RunUsage is what a run used.
type RunUsage struct {
	InputTokens  int   `json:"inputTokens"`
	OutputTokens int   `json:"outputTokens"`
	Units        int64 `json:"units"`
}

type runIn struct {
	Name           string `path:"name" pattern:"^[a-z0-9][a-z0-9-]{0,62}$" doc:"The task's name"`
	ContentType    string `header:"Content-Type"`
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
}

// HistoryMessage is one earlier message of a run's conversation.
type HistoryMessage struct {
	Role    string `json:"role" enum:"user,assistant"`
	Content string `json:"content"`
}

func (s *server) registerRuns() {
	run := op("runTask", http.MethodPost, "/v1/tasks/{name}/run", PermCall, "Run a task and get its answer", http.StatusOK,
		http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout)
	run.RequestBody = jsonBody(s.api, RunRequest{})
	run.SkipValidateBody = true
	describeRunAnswer(s.api, &run)
	huma.Register(s.api, run, s.runTask)
}

func (s *server) runTask(ctx context.Context, in *runIn) (*runOut, error) {
	if err := checkJSON(in.ContentType); err != nil {
		return nil, err
	}
	req, fe := taskdef.DecodeRun(in.RawBody)
	if fe != nil {
		return nil, invalid(fe.Field, fe.Detail)
	}
	stored, err := s.cfg.Store.GetTask(ctx, in.Name)
	if err != nil {
		return nil, fromStore(err)
	}
	var st storedTask
	if err := json.Unmarshal(stored.Definition, &st); err != nil {
		return nil, problem(CodeInternal, "a stored task does not decode: "+err.Error(), "")
	}
	d := st.Definition
	if d.Enabled != nil && !*d.Enabled {
		return nil, problem(CodeTaskDisabled, fmt.Sprintf("task %q is disabled; a developer enables it with PUT", d.Name), "")
	}
	if fe := taskdef.CheckRun(d, req); fe != nil {
		return nil, invalid(fe.Field, fe.Detail)
	}
	if req.Stream && s.cfg.Broker == nil {
		return nil, invalid("stream", "this API has no broker to stream runs through (AGENT_NATS_URL); leave stream out or set it to false")
	}
	if req.Stream {
		if p := s.streamingOff(); p != nil {
			return nil, p
		}
	}
	pv, err := s.cfg.Store.GetPromptVersion(ctx, d.Prompt.Name, d.Prompt.Version)
	if err != nil {
		return nil, fromStore(err)
	}
	args, input, field, over := runArgs(d, taskdef.Prompt(d, pv.Text, req), req)
	if over > 0 {
		// Seed 001: text past the inline budget is refused, never split.
		return nil, invalid(field, fmt.Sprintf("%d bytes, over the %d-byte inline budget of one message (text is never split or truncated); send less, or keep the task's prompt and variables shorter", over, contract.MaxInlineTextBytes))
	}
	// Every run's text goes to the broker, /events serves any run: also
	// while the broker is away, so a run's later turns stream once it is
	// back (a worker without it runs the turn unstreamed).
	args.Stream = s.cfg.Broker != nil

	id, err := s.runID(ctx, d.Name, in.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	policy := enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL
	if in.IdempotencyKey != "" {
		policy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING // the same key: the same run, the same answer
	}
	start := client.StartWorkflowOptions{
		ID: id, TaskQueue: s.cfg.TaskQueue, WorkflowIDConflictPolicy: policy,
		Memo: map[string]any{memoTask: d.Name, memoModel: d.Model},
		// Listed by AgentName, AgentModel and AgentState like any task.
		TypedSearchAttributes: starter.SearchAttributes(args.Agent), StaticSummary: starter.Summary(args),
	}
	stage := client.WorkflowUpdateStageCompleted
	if req.Stream {
		stage = client.WorkflowUpdateStageAccepted // the events tell the rest
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.RunTimeout)
	updateWithStart := func() (client.WorkflowUpdateHandle, error) {
		return s.cfg.Store.C.UpdateWithStartWorkflow(rctx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: s.cfg.Store.C.NewWithStartWorkflowOperation(start, workflows.WorkflowType, args),
			UpdateOptions: client.UpdateWorkflowOptions{UpdateID: "run", UpdateName: workflows.UpdateAsk, Args: []any{input},
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
	headers := func(p *Problem) error {
		return huma.ErrorWithHeaders(p, http.Header{"X-Request-Id": {id}, "X-Ai-Processed-In": {s.cfg.ProcessedIn}})
	}
	out := &runOut{RequestID: id, ProcessedIn: s.cfg.ProcessedIn}
	if err == nil && req.Stream {
		out.Body = func(hctx huma.Context) {
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
			s.serve(sctx, newSSE(hctx), relay{runID: id, model: d.Model, json: d.JSON, firstTurn: true, answered: answered})
		}
		return out, nil
	}
	defer cancel()
	var res workflows.AskResult
	if err == nil {
		err = h.Get(rctx, &res)
	}
	if err != nil {
		if (rctx.Err() != nil || waitEnded(err)) && ctx.Err() == nil {
			return nil, headers(problem(CodeRunTimeout, fmt.Sprintf("run %s did not answer within %s; it goes on: read its answer with GET /v1/runs/%s/messages", id, s.cfg.RunTimeout, id), ""))
		}
		return nil, headers(runProblem(err))
	}
	answer := runAnswerBody{Data: s.answer(d, res)}
	out.Body = func(hctx huma.Context) {
		hctx.SetHeader("Content-Type", "application/json")
		hctx.SetStatus(http.StatusOK)
		_ = json.NewEncoder(hctx.BodyWriter()).Encode(answer)
	}
	return out, nil
}

// runArgs is the AgentTask a run starts, and its input. A message text
// over the inline budget is reported (its field and size), not split.
func runArgs(d taskdef.Definition, prompt string, req taskdef.RunRequest) (workflows.StartArgs, contract.TaskIO, string, int) {
	agent := contract.AgentSpec{Name: d.Name, Model: d.Model, Instructions: prompt, MaxTokens: d.MaxTokens,
		Temperature: d.Temperature, TopP: d.TopP, ReasoningEffort: d.ReasoningEffort, JSON: d.JSON, Schema: d.Schema}
	text, field := prompt, "variables"
	if req.Input != nil && *req.Input != "" {
		text, field = *req.Input, "input"
	} else {
		agent.Instructions = "" // no input: the prompt is the message
	}
	args := workflows.StartArgs{Agent: agent, Mode: workflows.ModeConversation, IdleTimeout: runIdle}
	for _, m := range req.History {
		args.History = append(args.History, workflows.HistoryMessage{Role: m.Role, Content: m.Content})
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
func (s *server) answer(d taskdef.Definition, res workflows.AskResult) RunAnswer {
	a := RunAnswer{Task: d.Name, Model: d.Model, Text: contract.TextOf(res.Output), StopReason: res.Turn.StopReason,
		Usage: RunUsage{InputTokens: res.Turn.Usage.InputTokens, OutputTokens: res.Turn.Usage.OutputTokens}}
	if a.StopReason == "" {
		a.StopReason = "end"
	}
	if t := strings.TrimSpace(a.Text); d.JSON && json.Valid([]byte(t)) {
		a.JSON = json.RawMessage(t)
	}
	if m, ok := s.cfg.Catalog.Get(d.Model); ok {
		a.Usage.Units = m.Units(int64(a.Usage.InputTokens), int64(a.Usage.OutputTokens))
	}
	return a
}

// waitEnded says the wait for the ask ended, not the run: the server may
// cancel the long poll a moment before rctx's deadline fires here, so the
// SDK's timeout error is a timeout even while rctx.Err() is still nil.
func waitEnded(err error) bool {
	var ended *client.WorkflowUpdateServiceTimeoutOrCanceledError
	return errors.As(err, &ended)
}

// runProblem maps a run's failure to its problem.
func runProblem(err error) *Problem {
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return problem(CodeInternal, "a run of that ID exists already", "")
	}
	return problemOfType(errorTypeOf(err))
}

// errorTypeOf is a run failure's error type (the task's error types, as
// the ask update and the model activity report them) and message.
func errorTypeOf(err error) (string, string) {
	var ae *temporal.ApplicationError
	var canceled *temporal.CanceledError
	switch {
	case errors.As(err, &ae):
		return ae.Type(), ae.Message()
	case errors.As(err, &canceled):
		return workflows.ErrTurnCanceled, "the run was canceled"
	}
	return "", "the run failed: " + err.Error()
}

// problemOfType maps a run's error type to its problem: the same for an
// answer and for a stream's error event.
func problemOfType(typ, msg string) *Problem {
	switch typ {
	case contract.ErrModel, "MODEL_UNAVAILABLE", contract.ErrInternal:
		return problem(CodeModelError, msg, "")
	case contract.ErrInvalidInput, "GUARDRAIL":
		return problem(CodeValidationFailed, msg, "")
	case contract.ErrTaskClosed, workflows.ErrTurnCanceled:
		return problem(CodeRunClosed, msg, "")
	case "":
		return problem(CodeInternal, msg, "")
	}
	return problem(CodeModelError, typ+": "+msg, "")
}

type runIDIn struct {
	ID string `path:"id" pattern:"^run-[a-z2-7]{26}$" doc:"The run's ID (X-Request-Id of its answer)"`
}

type statusOut struct {
	Body struct {
		Data workflows.Status `json:"data"`
	}
}

type messagesOut struct {
	Body struct {
		Data []contract.Message `json:"data"`
	}
}

type receiptOut struct {
	Body struct {
		Data workflows.SendResult `json:"data"`
	}
}

type canceledOut struct {
	Body struct {
		Data struct {
			Canceled bool `json:"canceled"`
		} `json:"data"`
	}
}

func (s *server) registerRunReads() {
	huma.Register(s.api, op("getRun", http.MethodGet, "/v1/runs/{id}", PermView, "A run's status (the status query)", http.StatusOK, http.StatusNotFound),
		func(ctx context.Context, in *runIDIn) (*statusOut, error) {
			if _, err := s.ownRun(ctx, in.ID); err != nil {
				return nil, err
			}
			out := &statusOut{}
			if err := s.query(ctx, in.ID, &out.Body.Data, workflows.QueryStatus); err != nil {
				return nil, err
			}
			return out, nil
		})
	huma.Register(s.api, op("getRunMessages", http.MethodGet, "/v1/runs/{id}/messages", PermView, "A run's conversation (seed 000's messages)", http.StatusOK, http.StatusNotFound, http.StatusServiceUnavailable),
		func(ctx context.Context, in *struct {
			ID    string `path:"id" pattern:"^run-[a-z2-7]{26}$"`
			After int    `query:"after" minimum:"0" doc:"Entries after this many"`
			Limit int    `query:"limit" minimum:"0" maximum:"1000" doc:"At most this many; 0: as many as fit a page"`
		}) (*messagesOut, error) {
			if _, err := s.ownRun(ctx, in.ID); err != nil {
				return nil, err
			}
			out := &messagesOut{}
			if err := s.queryMessages(ctx, in.ID, &out.Body.Data, workflows.MessagesPage{After: in.After, Limit: in.Limit}); err != nil {
				return nil, err
			}
			if out.Body.Data == nil {
				out.Body.Data = []contract.Message{}
			}
			return out, nil
		})
	send := op("sendRunInput", http.MethodPost, "/v1/runs/{id}/inputs", PermCall, "Send a follow-up input (a TaskIO) to a run", http.StatusOK,
		http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
	send.SkipValidateBody = true // the run checks the input, as it checks any input
	huma.Register(s.api, send,
		func(ctx context.Context, in *struct {
			ID   string `path:"id" pattern:"^run-[a-z2-7]{26}$"`
			Body contract.TaskIO
		}) (*receiptOut, error) {
			task, err := s.ownRun(ctx, in.ID)
			if err != nil {
				return nil, err
			}
			stored, err := s.cfg.Store.GetTask(ctx, task)
			if err != nil {
				return nil, fromStore(err) // a deleted task's runs are refused
			}
			var st storedTask
			if err := json.Unmarshal(stored.Definition, &st); err != nil {
				return nil, problem(CodeInternal, "a stored task does not decode: "+err.Error(), "")
			}
			if st.Definition.Enabled != nil && !*st.Definition.Enabled {
				return nil, problem(CodeTaskDisabled, fmt.Sprintf("task %q is disabled", task), "")
			}
			if n, max := textBytes(in.Body), derefInt(st.Definition.Input.MaxBytes); n > max {
				return nil, invalid("message", fmt.Sprintf("%d bytes of text, more than the task's input.maxBytes %d", n, max))
			}
			h, err := s.cfg.Store.C.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: in.ID, UpdateName: workflows.UpdateSend,
				Args: []any{in.Body}, WaitForStage: client.WorkflowUpdateStageCompleted})
			out := &receiptOut{}
			if err == nil {
				err = h.Get(ctx, &out.Body.Data)
			}
			if err != nil {
				return nil, closedOr(err)
			}
			return out, nil
		})
	huma.Register(s.api, op("cancelRun", http.MethodPost, "/v1/runs/{id}/cancel", PermCall, "Cancel a run", http.StatusOK, http.StatusNotFound, http.StatusConflict),
		func(ctx context.Context, in *runIDIn) (*canceledOut, error) {
			if _, err := s.ownRun(ctx, in.ID); err != nil {
				return nil, err
			}
			if err := s.cfg.Store.C.CancelWorkflow(ctx, in.ID, ""); err != nil {
				return nil, closedOr(err)
			}
			out := &canceledOut{}
			out.Body.Data.Canceled = true
			return out, nil
		})
	s.registerApprovals() // approvals.go
}

// ownRun finds a run this API started and returns its task's name.
func (s *server) ownRun(ctx context.Context, id string) (string, error) {
	d, err := s.cfg.Store.C.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return "", problem(CodeRunNotFound, fmt.Sprintf("no run %s", id), "")
	}
	if err != nil {
		return "", problem(CodeInternal, err.Error(), "")
	}
	field := d.GetWorkflowExecutionInfo().GetMemo().GetFields()[memoTask]
	var task string
	if field == nil || json.Unmarshal(field.GetData(), &task) != nil || task == "" {
		return "", problem(CodeRunNotFound, fmt.Sprintf("no run %s was started by this API", id), "")
	}
	return task, nil
}

// queryMessages asks the messages query, again while the run answers
// MESSAGES_LOADING (entries of earlier runs still being loaded from a slow
// store, outside the run's lock), so a slow store delays the answer; a
// store that stays too slow or down answers 503 unavailable.
func (s *server) queryMessages(ctx context.Context, id string, out any, page workflows.MessagesPage) error {
	deadline := time.Now().Add(workflows.MessagesLoadingRetryFor)
	for {
		err := s.query(ctx, id, out, workflows.QueryMessages, page)
		if !workflows.IsMessagesLoading(err) {
			return err
		}
		if time.Now().After(deadline) {
			return problem(CodeUnavailable, "the run's earlier messages are still being loaded from storage (slow or unavailable); retry in a moment", "", http.StatusServiceUnavailable)
		}
		select {
		case <-ctx.Done():
			return problem(CodeUnavailable, "the run's earlier messages are being loaded from storage; retry in a moment", "", http.StatusServiceUnavailable)
		case <-time.After(workflows.MessagesLoadingRetryPause):
		}
	}
}

func (s *server) query(ctx context.Context, id string, out any, name string, args ...any) error {
	v, err := s.cfg.Store.C.QueryWorkflow(ctx, id, "", name, args...)
	if err != nil {
		return problem(CodeInternal, "reading the run: "+err.Error(), "")
	}
	if err := v.Get(out); err != nil {
		return problem(CodeInternal, "reading the run: "+err.Error(), "")
	}
	return nil
}

// closedOr maps a refused follow-up: a run that has ended is run_closed.
func closedOr(err error) error {
	var ae *temporal.ApplicationError
	var nf *serviceerror.NotFound
	var done *serviceerror.FailedPrecondition
	switch {
	case errors.As(err, &ae) && ae.Type() == contract.ErrTaskClosed, errors.As(err, &nf), errors.As(err, &done):
		return problem(CodeRunClosed, "the run has ended: "+err.Error(), "")
	case errors.As(err, &ae):
		return problem(CodeValidationFailed, ae.Message(), "")
	}
	return problem(CodeInternal, err.Error(), "")
}

// textBytes counts the text an input sends.
func textBytes(in contract.TaskIO) int {
	n := 0
	for _, p := range in.Message {
		if p.Text != nil {
			n += len(*p.Text)
		}
	}
	return n
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
