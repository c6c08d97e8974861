package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/transcript"
)

// Activities holds what the activities depend on.
type Activities struct {
	Models     llm.Client
	Transcript Transcript
	Files      *mount.Store // the agents' mounts; nil: agents cannot use files
	// Mounts is the storage agents may name (AGENT_MOUNTS); nothing else is opened.
	Mounts mount.Mounts
	// OutputModel is the worker's default model of the shaping pass ("" none).
	OutputModel string
	// Signals tells a task that one of its calls is waiting out an outage
	// (the worker's Temporal client); nil: no reports.
	Signals Signaler
	// Broker carries streamed turns' text to the Tasks API (stream.go);
	// nil: turns are not streamed.
	Broker *broker.Broker
	// Metrics records model calls and shaping attempts (metrics.go); nil:
	// nothing is recorded.
	Metrics Metrics

	once    sync.Once
	windows *windowCache  // per-task tails of the model's window
	context contextMemory // what providers' contexts took and refused (contextmemory.go)
}

// Transcript is the part of the transcript store the activities use.
type Transcript interface {
	WriteAt(ctx context.Context, k TranscriptKey, pos int, m contract.Message) error
	// PutPending stores an output once and returns the stored one.
	PutPending(ctx context.Context, k TranscriptKey, pos, turn int, m contract.Message) (contract.Message, error)
	GetPending(ctx context.Context, k TranscriptKey, pos, turn int) (contract.Message, error)
	Window(ctx context.Context, k TranscriptKey, end, budgetBytes int) (int, []contract.Message, error)
	Read(ctx context.Context, k TranscriptKey, from, to int) ([]contract.Message, error)
	// WriteLink records k.Parent for tasks that continue k's task.
	WriteLink(ctx context.Context, k TranscriptKey) error
	// PutOnce stores v under name unless stored already (then decoded into
	// stored, true); GetOnce reads it.
	PutOnce(ctx context.Context, k TranscriptKey, name string, v, stored any) (bool, error)
	GetOnce(ctx context.Context, k TranscriptKey, name string, v any) error
}

const (
	heartbeatEvery = 500 * time.Millisecond
	// structuredAttempts bounds the model calls a turn makes to get an output
	// that carries every exposes key and fits the schema.
	structuredAttempts = 3
	// Error type of a transient model failure; retried by the activity's
	// retry policy, reported as MODEL_ERROR if it never recovers.
	errModelUnavailable = "MODEL_UNAVAILABLE"
)

// ModelTurn makes the new entries durable, reads the conversation window
// from the transcript, calls the model and returns its output. It heartbeats
// throughout, so cancel-turn stops it promptly and a dead worker is noticed.
func (a *Activities) ModelTurn(ctx context.Context, in ModelTurnInput) (*ModelTurnResult, error) {
	if in.AgentRef != nil { // a large spec travels by reference (stash.go)
		spec, err := a.agentSpec(ctx, in.Agent, in.AgentRef)
		if err != nil {
			return nil, a.waitOut(ctx, in.Retry, err)
		}
		in.Agent = spec
	}
	stream := a.openStream(ctx, in) // nil unless the turn streams its text (stream.go)
	res, err := a.modelTurn(ctx, in, stream)
	if err == nil && in.LargeValues != nil { // large saved values go by reference (values.go)
		if err = a.storeLargeValues(ctx, in, res); err != nil {
			res = nil
		}
	}
	err = a.waitOut(ctx, in.Retry, err)
	stream.end(ctx, in, res, err, log.With(activity.GetLogger(ctx), "task_id", in.Task(), "turn", in.Turn))
	return res, err
}

func (a *Activities) modelTurn(ctx context.Context, in ModelTurnInput, stream *turnStream) (*ModelTurnResult, error) {
	ctx, stop := heartbeating(ctx)
	defer stop()
	logger := log.With(activity.GetLogger(ctx), "task_id", in.Task(), "turn", in.Turn)
	agent, err := contract.CheckAgent("agent", in.Agent)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrInvalidInput, nil)
	}
	if stream != nil {
		if earlier, ok, err := a.earlierAnswer(ctx, in); err != nil {
			return nil, err
		} else if ok { // this attempt's stream starts again: with the stored answer
			if _, err := a.Transcript.PutPending(transcript.PerRun(ctx), in.Transcript, in.End, in.Turn, contract.Message{Type: contract.TypeOutput, TaskIO: earlier.Output}); err != nil {
				return nil, storageError("storing the output", err)
			}
			stream.replay(contract.TextOf(earlier.Output))
			return earlier, nil
		}
	}
	fresh, err := a.persistEntries(ctx, in.Transcript, in.Entries)
	if err != nil {
		return nil, err
	}
	from, window, err := a.window(ctx, in.Transcript, fresh, in.End, in.Agent.ContextBudgetBytes())
	if err != nil {
		return nil, storageError("reading the conversation window", err)
	}
	if len(window) == 0 && in.End > 0 {
		// Even the newest entry is over the budget: show it alone, and let
		// the model's own limit speak.
		if window, err = a.Transcript.Read(ctx, in.Transcript, in.End-1, in.End); err != nil {
			return nil, storageError("reading the newest entry", err)
		}
		from = in.End - 1
	}
	if from > in.TurnFrom && in.TurnFrom < in.End {
		// The inputs this call commits are always shown: committed_at is
		// the read receipt (seed 000). Only older entries are left out.
		if window, err = a.Transcript.Read(ctx, in.Transcript, in.TurnFrom, in.End); err != nil {
			return nil, storageError("reading the inputs this turn commits", err)
		}
		from = in.TurnFrom
	}
	keep := 0 // the newest entries fitRequest may not leave out
	if in.TurnFrom < in.End {
		keep = in.End - max(from, in.TurnFrom)
	}
	agent.Spec.Instructions = FillInstructions(agent.Spec.Instructions, in.Variables, in.Secrets)
	carried, err := a.loadCarried(ctx, in.Transcript)
	if err != nil {
		return nil, err
	}
	shown := window
	if len(carried) > 0 { // a continuation's earlier files, from its own space
		shown = make([]contract.Message, len(window))
		for i, m := range window {
			shown[i] = carried.apply(m)
		}
	}
	full, entries, err := a.buildRequest(ctx, agent, in.Task(), from, shown, in.Scratch, in.OwnFrom, in.Recall)
	if err != nil {
		return nil, err
	}
	if full.Tools, err = a.offeredTools(ctx, in, from, window); err != nil {
		return nil, err
	}
	if in.Builtins {
		full.Tools = append(full.Tools, builtinTools...)
	}
	if stream != nil {
		full.OnText = stream.Text
	}
	res := &ModelTurnResult{WindowFrom: from, Offered: []string{}}
	for _, tool := range full.Tools {
		res.Offered = append(res.Offered, tool.Name)
	}
	memoryKey := contextKey(agent.Spec)
	limit := a.context.limit(memoryKey, contextLimit(agent.Spec))
	var refused []int  // sizes the provider refused as over the model's context
	var refusal string // the provider's last word on it
	for {
		// What is sent is cut to fit the context (context.go); full keeps
		// everything, so a smaller limit cuts it afresh.
		req, fit := fitRequest(full, entries, limit, keep)
		if fit.Tokens < fit.Full {
			logger.Info("request cut to fit the model's context", "tokens", fit.Tokens, "built", fit.Full,
				"limit", limit, "files_cut", fit.Cut, "entries_left_out", fit.Dropped)
		}
		if n := len(refused); n > 0 && fit.Tokens >= refused[n-1] {
			return nil, contextRefused(agent.Spec, refused, "the request cannot get smaller", refusal)
		}
		resp, err := a.complete(ctx, req) // measured (metrics.go)
		var le *llm.Error
		if err != nil && ctx.Err() == nil && errors.As(err, &le) && le.ContextLength {
			// Retrying the same request cannot help: send less.
			refused, refusal = append(refused, fit.Tokens), le.Message
			a.context.refusedAt(memoryKey, fit.Tokens)
			if len(refused) > maxShrinks {
				return nil, contextRefused(agent.Spec, refused, fmt.Sprintf("shrunk %d times", maxShrinks), refusal)
			}
			limit = fit.Tokens / 2
			logger.Warn("the provider refused the request as over the model's context; sending less",
				"tokens", fit.Tokens, "limit", limit, "shrink", len(refused), "error", le.Message)
			continue
		}
		if err != nil {
			return nil, modelError(ctx, err)
		}
		a.context.takenAt(memoryKey, fit.Tokens)
		res.Calls++
		res.WindowFrom = from + fit.Dropped
		res.Usage.InputTokens += resp.Usage.InputTokens
		res.Usage.OutputTokens += resp.Usage.OutputTokens
		res.StopReason, res.Model = string(resp.StopReason), resp.Model
		if len(resp.ToolCalls) > 0 {
			for _, tc := range resp.ToolCalls {
				res.ToolCalls = append(res.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
			}
			logger.Info("model called capabilities", "calls", len(res.ToolCalls))
			return res, nil // the workflow runs them, then calls the model again
		}
		out, violations := parseOutput(agent, resp)
		if len(violations) == 0 {
			out, violations, err = a.attach(ctx, agent, in.Task(), out)
			if err != nil {
				return nil, err
			}
		}
		if len(violations) == 0 {
			if out, err = a.longAnswerToFile(ctx, agent, in, out); err != nil {
				return nil, err
			}
			res.Output = out
			break
		}
		msg := contract.JoinViolations(violations)
		if res.Calls >= structuredAttempts {
			return nil, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("the model's answer did not fit the agent's schema after %d calls: %s", res.Calls, msg), contract.ErrModel, nil)
		}
		logger.Warn("output refused, asking again", "violations", msg)
		if stream != nil { // the refused answer's text was sent: the next starts afresh
			stream.again(ctx, "the answer did not fit the task's schema ("+msg+"); the model is asked again")
		}
		full.Messages = append(full.Messages,
			llm.Message{Role: llm.RoleAssistant, Content: resp.Text},
			llm.Message{Role: llm.RoleUser, Content: "Your answer was refused: " + msg + ". Answer again with one JSON object that has every required key and fits the schema."})
	}
	if b, _ := json.Marshal(res.Output); len(b) > MaxOutputBytes {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the model's answer is %d bytes, more than the %d an output may hold; lower the agent's maxTokens", len(b), MaxOutputBytes), contract.ErrModel, nil)
	}
	if stream != nil {
		if err := a.storeStreamed(ctx, in, res); err != nil {
			return nil, err
		}
	}
	// The pending output is this run's: one that a run a reset replaced
	// stored for the same position and turn gives way (transcript.PerRun).
	pending := contract.Message{Type: contract.TypeOutput, TaskIO: res.Output}
	stored, err := a.Transcript.PutPending(transcript.PerRun(ctx), in.Transcript, in.End, in.Turn, pending)
	if err != nil {
		return nil, storageError("storing the output", err)
	}
	res.Output = stored.TaskIO // an earlier attempt's answer, when one was stored: the transcript has one answer per turn
	logger.Info("model answered", "model", res.Model, "stop_reason", res.StopReason, "calls", res.Calls,
		"window_from", from, "input_tokens", res.Usage.InputTokens, "output_tokens", res.Usage.OutputTokens)
	return res, nil
}

// WriteEntries makes entries durable without a model call.
func (a *Activities) WriteEntries(ctx context.Context, in WriteEntriesInput) error {
	return a.persist(ctx, in.Transcript, in.Entries)
}

// persist writes committed inputs and stamps pending outputs. Both are
// idempotent, so retries and re-sent entries of a canceled turn are safe.
func (a *Activities) persist(ctx context.Context, k TranscriptKey, e Entries) error {
	_, err := a.persistEntries(ctx, k, e)
	return err
}

// persistEntries is persist returning the final entries by position. The
// writes are independent, so they run at once.
func (a *Activities) persistEntries(ctx context.Context, k TranscriptKey, e Entries) (map[int]contract.Message, error) {
	out := make(map[int]contract.Message, len(e.Stamps)+len(e.Write))
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(e.Stamps)+len(e.Write))
	for i, s := range e.Stamps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := a.Transcript.GetPending(ctx, k, s.Position, s.Turn)
			if err != nil {
				errs[i] = storageError(fmt.Sprintf("reading the output of turn %d", s.Turn), err)
				return
			}
			m.CommittedAt = s.CommittedAt
			if err := a.Transcript.WriteAt(ctx, k, s.Position, m); err != nil {
				errs[i] = storageError(fmt.Sprintf("stamping the output at %d", s.Position), err)
				return
			}
			mu.Lock()
			out[s.Position] = m
			mu.Unlock()
		}()
	}
	for i, w := range e.Write {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.Transcript.WriteAt(ctx, k, w.Position, w.Entry); err != nil {
				errs[len(e.Stamps)+i] = storageError(fmt.Sprintf("writing entry %d", w.Position), err)
				return
			}
			mu.Lock()
			out[w.Position] = w.Entry
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// storageError is a transcript fault: retried, and reported as INTERNAL if
// it never recovers (it is not the model's fault). A position that holds
// another entry of this run (ErrConflict), or one of the run that replaced
// this one (ErrSuperseded: this attempt outlived its run, reset), stays so:
// that is final at once, never retried for the task's retry timeout.
func storageError(what string, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, transcript.ErrConflict) || errors.Is(err, transcript.ErrSuperseded) {
		return temporal.NewNonRetryableApplicationError(what+": "+err.Error(), contract.ErrInternal, err)
	}
	return temporal.NewApplicationError(what+": "+err.Error(), contract.ErrInternal)
}

// heartbeating records a heartbeat at a steady pace until stopped.
func heartbeating(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return ctx, func() { close(done); cancel() }
}

// modelError maps a client error to a retryable or final activity error.
func modelError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var le *llm.Error
	if errors.As(err, &le) && !le.Retryable {
		return temporal.NewNonRetryableApplicationError(le.Message, contract.ErrModel, nil)
	}
	opts := temporal.ApplicationErrorOptions{}
	msg := err.Error()
	if le != nil {
		msg = le.Message
		if le.RetryAfter > 0 {
			opts.NextRetryDelay = le.RetryAfter
		}
	}
	return temporal.NewApplicationErrorWithOptions(msg, errModelUnavailable, opts)
}

// buildRequest turns the agent and the window into a chat request, with
// file parts resolved against the task's mount for this request only. It
// returns the index in the request's messages of each window entry.
func (acts *Activities) buildRequest(ctx context.Context, a *contract.Agent, taskID string, from int, window []contract.Message, scratch []ScratchMessage, ownFrom int, recall []Recalled) (llm.Request, []int, error) {
	req := llm.Request{Model: a.Spec.Model, MaxTokens: a.Spec.MaxTokens, Temperature: a.Spec.Temperature,
		TopP: a.Spec.TopP, ReasoningEffort: a.Spec.ReasoningEffort}
	system := a.Spec.Instructions
	if a.Spec.JSON {
		req.JSONObject = true
		if a.Answer != nil {
			_ = json.Unmarshal(a.Spec.Schema, &req.JSONSchema)
			req.SchemaName = "answer"
			system = strings.TrimSpace(system + "\n\nAnswer with one JSON object that fits this schema:\n" + string(a.Spec.Schema))
		} else {
			system = strings.TrimSpace(system + "\n\nAnswer with one JSON object.")
		}
	}
	if structured(a) {
		req.JSONSchema = outputSchema(a)
		req.SchemaName = "output"
		b, _ := json.Marshal(req.JSONSchema)
		system = strings.TrimSpace(system + "\n\nAnswer with one JSON object that fits this schema; \"message\" holds your reply to the user:\n" + string(b))
		if a.Spec.Mount != nil {
			system += "\nTo hand back files of your mount with your answer, list their references (" + a.Spec.Mount.Root + "://name) in \"attachments\"."
		}
	}
	if system != "" {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: system})
	}
	if len(recall) > 0 { // after the system message, before the conversation
		req.Messages = append(req.Messages, recallMessage(recall))
	}
	entries := make([]int, 0, len(window))
	nextScratch := 0
	addScratch := func(before int) error {
		var files []llm.Part // returned by the calls of one response: shown after all their tool messages
		flush := func() {
			if len(files) > 0 {
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Parts: files})
				files = nil
			}
		}
		for ; nextScratch < len(scratch) && scratch[nextScratch].At <= before; nextScratch++ {
			s := scratch[nextScratch]
			if len(s.ToolCalls) > 0 {
				flush() // the previous response's files, before the next calls
			}
			m, parts, err := acts.scratchMessages(ctx, a.Spec, taskID, s)
			if err != nil {
				return err
			}
			req.Messages = append(req.Messages, m)
			files = append(files, parts...)
		}
		flush()
		return nil
	}
	for i, m := range window {
		if err := addScratch(from + i); err != nil {
			return req, nil, err
		}
		role := llm.RoleUser
		if m.Type == contract.TypeOutput {
			role = llm.RoleAssistant
		}
		msg := llm.Message{Role: role, Content: renderEntry(a, m)}
		if role == llm.RoleUser && m.TaskIO.HasFiles() && from+i >= ownFrom {
			parts, err := acts.resolveFiles(ctx, a.Spec, taskID, m.TaskIO)
			if err != nil {
				return req, nil, err
			}
			msg.Parts = append([]llm.Part{{Type: "text", Text: msg.Content}}, parts...)
		}
		entries = append(entries, len(req.Messages))
		req.Messages = append(req.Messages, msg)
	}
	if err := addScratch(int(^uint(0) >> 1)); err != nil {
		return req, nil, err
	}
	return req, entries, nil
}

// contextRefused is the turn's failure when the provider refused every
// size tried as over the model's context.
func contextRefused(spec contract.AgentSpec, refused []int, why, refusal string) error {
	sizes := make([]string, len(refused))
	for i, n := range refused {
		sizes[i] = fmt.Sprint(n)
	}
	ctx := spec.ContextTokens
	if ctx == 0 {
		ctx = contract.DefaultContextTokens
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
		"the provider refused the request as longer than the model's context at every size tried (about %s tokens, by this runtime's count; %s; the agent's contextTokens is %d): %s",
		strings.Join(sizes, ", "), why, ctx, refusal), contract.ErrModel, nil)
}

// renderEntry is how an entry reads to the model: its text, plus its
// dynamic values as JSON.
func renderEntry(a *contract.Agent, m contract.Message) string {
	var texts []string
	for _, p := range m.Message {
		if p.Text != nil {
			texts = append(texts, *p.Text)
		}
	}
	for _, p := range m.Message {
		if p.File != nil {
			texts = append(texts, fmt.Sprintf("[attached: %s (%s, %d bytes)]", *p.File, p.MimeType, size(p)))
		}
	}
	text := strings.Join(texts, "\n\n")
	if m.Type == contract.TypeOutput && a.Exposes != nil {
		obj := map[string]json.RawMessage{}
		for k, v := range m.Values {
			obj[k] = v
		}
		tb, _ := json.Marshal(text)
		obj[contract.KeyMessage] = tb
		b, _ := json.Marshal(obj)
		return string(b)
	}
	if len(m.Values) > 0 {
		b, _ := json.Marshal(m.Values)
		text += "\n\nParameters: " + string(b)
	}
	return text
}

// parseOutput reads the model's answer into an output TaskIO and lists what
// keeps it from being one.
func parseOutput(a *contract.Agent, resp llm.Response) (contract.TaskIO, []contract.Violation) {
	if a.Spec.JSON {
		return parseJSONAnswer(a, resp.Text)
	}
	if !structured(a) {
		return contract.TaskIO{Message: contract.TextParts(resp.Text)}, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(strings.TrimSpace(resp.Text)), &obj); err != nil || obj == nil {
		return contract.TaskIO{}, []contract.Violation{{Path: "/", Message: "the answer is not one JSON object"}}
	}
	var text string
	if raw, ok := obj[contract.KeyMessage]; !ok {
		return contract.TaskIO{}, []contract.Violation{{Path: "/message", Message: "missing: the reply text goes under \"message\""}}
	} else if err := json.Unmarshal(raw, &text); err != nil {
		return contract.TaskIO{}, []contract.Violation{{Path: "/message", Message: "must be a string"}}
	}
	delete(obj, contract.KeyMessage)
	parts := contract.TextParts(text)
	if a.Spec.Mount != nil {
		if raw, ok := obj[keyAttachments]; ok {
			var refs []string
			if err := json.Unmarshal(raw, &refs); err != nil {
				return contract.TaskIO{}, []contract.Violation{{Path: "/" + keyAttachments, Message: "must be a list of file references"}}
			}
			for _, r := range refs {
				ref := r
				parts = append(parts, contract.ContentPart{MimeType: mimeOf(ref), File: &ref})
			}
			delete(obj, keyAttachments)
		}
	}
	if vs := contract.CheckOutput(a, obj); len(vs) > 0 {
		return contract.TaskIO{}, vs
	}
	if len(obj) == 0 {
		obj = nil
	}
	return contract.TaskIO{Message: parts, Values: obj}, nil
}

// parseJSONAnswer checks a JSON agent's answer: one JSON object, fitting
// the agent's schema when it has one. The object stays the output's text.
func parseJSONAnswer(a *contract.Agent, text string) (contract.TaskIO, []contract.Violation) {
	text = strings.TrimSpace(text)
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &obj); err != nil || obj == nil {
		return contract.TaskIO{}, []contract.Violation{{Path: "/", Message: "the answer is not one JSON object"}}
	}
	if a.Answer != nil {
		if vs := a.Answer.Validate(obj); len(vs) > 0 {
			return contract.TaskIO{}, vs
		}
	}
	return contract.TaskIO{Message: contract.TextParts(text)}, nil
}
