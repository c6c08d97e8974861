package tasksapi

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/sse"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/taskdef"
)

// POST /v1/tasks/{name}/ag-ui serves a stored task to AG-UI 1.0 clients
// (docs/ag-ui.md): it takes AG-UI's RunAgentInput and answers with AG-UI's
// events, read from the run's events in the broker (events=all) and
// translated by aguiRelay (aguievents.go).
//
// A thread is a conversation: its run's ID is derived from the calling
// key, the task and the threadId, so another key or task never reaches
// it. The first AG-UI run on a thread starts our run with the newest user
// message (and its frontend tools, aguitools.go); a later one sends its
// newest user message into the same run, or, when it carries resume
// entries or tool messages, decides the approvals the previous AG-UI run
// was interrupted for and answers the frontend tool calls it ended at.

const aguiPath = "/v1/tasks/{name}/ag-ui"

// aguiIn is the request: RunAgentInput, read by decodeAGUI.
type aguiIn struct {
	Name        string `path:"name" pattern:"^[a-z0-9][a-z0-9-]{0,62}$" doc:"The task's name"`
	ContentType string `header:"Content-Type"`
	RawBody     []byte
}

// aguiInput is what this endpoint reads of AG-UI's RunAgentInput.
type aguiInput struct {
	ThreadID       string          `json:"threadId"`
	RunID          string          `json:"runId"`
	Messages       []aguiMessage   `json:"messages"`
	Tools          []aguiTool      `json:"tools"`
	ForwardedProps json.RawMessage `json:"forwardedProps"`
	Resume         []aguiResume    `json:"resume"`
}

type aguiMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"toolCallId"`
	Error      string          `json:"error"` // a tool message's: the tool failed
}

// aguiResume answers one interrupt: an approval of the run.
type aguiResume struct {
	InterruptID string `json:"interruptId"`
	Status      string `json:"status"` // resolved | cancelled
	Payload     *struct {
		Approve *bool  `json:"approve"`
		Reason  string `json:"reason"`
	} `json:"payload"`
}

// maxAGUIBody bounds a RunAgentInput: the client sends the whole
// conversation it holds every time, of which only the newest message is
// read.
const maxAGUIBody = 4 << 20

func (s *server) registerAGUI() {
	o := op("runTaskAGUI", http.MethodPost, aguiPath, PermCall,
		"Run a task for an AG-UI 1.0 client: RunAgentInput in, AG-UI events out (docs/ag-ui.md)", http.StatusOK,
		http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable)
	o.SkipValidateBody = true
	o.MaxBodyBytes = maxAGUIBody
	o.RequestBody = &huma.RequestBody{Required: true, Description: "AG-UI's RunAgentInput (threadId, runId, messages, tools, forwardedProps.variables, resume)",
		Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{Type: huma.TypeObject}}}}
	o.Responses = map[string]*huma.Response{"200": {Description: "AG-UI events as server-sent events: RUN_STARTED, then the run's text messages, tool calls and results, and RUN_FINISHED (outcome success, or interrupt for approvals) or RUN_ERROR",
		Content: map[string]*huma.MediaType{"text/event-stream": {Schema: &huma.Schema{Type: huma.TypeObject}}}}}
	huma.Register(s.api, o, s.runAGUI)
}

// runAGUI answers one AG-UI run.
func (s *server) runAGUI(ctx context.Context, in *aguiIn) (*runOut, error) {
	if err := checkJSON(in.ContentType); err != nil {
		return nil, err
	}
	var input aguiInput
	if err := json.Unmarshal(in.RawBody, &input); err != nil {
		return nil, invalid("", "the body must be AG-UI's RunAgentInput: "+err.Error())
	}
	if input.ThreadID == "" || input.RunID == "" {
		return nil, invalid("threadId", "RunAgentInput needs threadId and runId")
	}
	d, err := s.storedDefinition(ctx, in.Name)
	if err != nil {
		return nil, err
	}
	if d.Enabled != nil && !*d.Enabled {
		return nil, problem(CodeTaskDisabled, fmt.Sprintf("task %q is disabled; a developer enables it with PUT", d.Name), "")
	}
	if s.cfg.Broker == nil {
		return nil, invalid("", "this API has no broker to stream runs through (AGENT_NATS_URL): AG-UI needs it")
	}
	if p := s.streamingOff(); p != nil {
		return nil, p
	}
	id := aguiRunID(caller(ctx), d.Name, input.ThreadID)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.RunTimeout)
	relay := &aguiRelay{s: s, runID: id, model: d.Model, threadID: input.ThreadID, aguiRunID: input.RunID}
	after, err := s.aguiBegin(ctx, rctx, id, d, input, relay)
	if err != nil {
		cancel()
		return nil, err
	}
	out := &runOut{RequestID: id, ProcessedIn: s.cfg.ProcessedIn}
	out.Body = func(hctx huma.Context) {
		defer cancel()
		sctx, stop := context.WithCancel(rctx)
		defer stop()
		go func() {
			select {
			case <-hctx.Context().Done():
				stop()
			case <-sctx.Done():
			}
		}()
		s.serveAGUI(sctx, openStream(hctx, nil), relay, after)
	}
	return out, nil
}

// aguiRunID is the run of a thread: the calling key, the task and the
// thread name it, so no other key or task reaches it.
func aguiRunID(key, task, thread string) string {
	sum := sha256.Sum256([]byte("ag-ui\x00" + key + "\x00" + task + "\x00" + thread))
	return "run-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16]))
}

// aguiBegin starts the thread's run, or hands the AG-UI run's newest user
// message, its resume entries or its tool results to the running one. It
// returns the event ID the AG-UI run's events follow; r learns what the
// run still waits for and which frontend tool calls this run answered.
func (s *server) aguiBegin(ctx, rctx context.Context, id string, d taskdef.Definition, input aguiInput, r *aguiRelay) (int64, error) {
	_, err := s.cfg.Store.C.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	endsWithTool := len(input.Messages) > 0 && input.Messages[len(input.Messages)-1].Role == "tool"
	if errors.As(err, &nf) {
		if len(input.Resume) > 0 || endsWithTool {
			return 0, invalid("resume", "this thread has no run to resume or to answer a tool call of: send its first user message without resume or tool results")
		}
		return 0, s.aguiStart(ctx, rctx, id, d, input)
	}
	if err != nil {
		return 0, problem(CodeInternal, err.Error(), "")
	}
	after, err := s.cfg.Broker.LastID(ctx, id)
	if err != nil {
		return 0, problem(CodeStreamingUnavailable, "reading the run's events: "+err.Error(), "")
	}
	if len(input.Resume) > 0 || endsWithTool {
		r.waiting, r.answeredCalls, err = s.aguiAnswers(ctx, id, input)
		return after, err
	}
	if n := len(input.Messages); n == 0 || input.Messages[n-1].Role != "user" {
		// What the run already answered is not sent again: a later AG-UI
		// run brings a new user message, or resume.
		return 0, invalid("messages", "a later run on the thread needs a new user message last (or resume entries): the newest message is not the user's")
	}
	text, fe := newestUserText(input.Messages)
	if fe != nil {
		return 0, fe
	}
	if n, max := len(text), derefInt(d.Input.MaxBytes); n > max {
		return 0, invalid("messages", fmt.Sprintf("the newest user message is %d bytes, more than the task's input.maxBytes %d", n, max))
	}
	h, err := s.cfg.Store.C.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: contract.UpdateSend,
		UpdateID: "ag-ui-" + lastMessageID(input.Messages), Args: []any{contract.TaskIO{Message: contract.TextParts(text)}},
		WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		var receipt contract.SendResult
		err = h.Get(ctx, &receipt)
	}
	if err != nil {
		return 0, closedOr(err)
	}
	return after, nil
}

// aguiStart starts the thread's run with its newest user message and the
// variables of forwardedProps.variables.
func (s *server) aguiStart(ctx, rctx context.Context, id string, d taskdef.Definition, input aguiInput) error {
	req := taskdef.RunRequest{}
	var props struct {
		Variables map[string]string `json:"variables"`
	}
	if len(input.ForwardedProps) > 0 && string(input.ForwardedProps) != "null" {
		if err := json.Unmarshal(input.ForwardedProps, &props); err != nil {
			return invalid("forwardedProps.variables", "must be an object of strings: "+err.Error())
		}
	}
	req.Variables = props.Variables
	if derefInt(d.Input.MaxBytes) > 0 {
		text, fe := newestUserText(input.Messages)
		if fe != nil {
			return fe
		}
		req.Input = &text
	}
	if fe := taskdef.CheckRun(d, req); fe != nil {
		field := fe.Field
		if field == "input" {
			field = "messages"
		} else if strings.HasPrefix(field, "variables") {
			field = "forwardedProps." + field
		}
		return invalid(field, fe.Detail)
	}
	args, first, err := s.runInput(ctx, d, req)
	if err != nil {
		return err
	}
	if args.Agent, err = withClientTools(args.Agent, input.Tools); err != nil {
		return err
	}
	if _, err := s.startRun(rctx, id, true, d, args, first, true); err != nil {
		return s.runFailed(ctx, rctx, id, err)
	}
	return nil
}

// aguiResume decides the approvals the resume entries answer: resolved
// approves unless its payload says approve: false; cancelled denies. Each
// approval answered is added to answered.
func (s *server) aguiResume(ctx context.Context, id string, resume []aguiResume, answered map[string]bool) error {
	for i, r := range resume {
		answered[r.InterruptID] = true
		approve := r.Status == "resolved"
		reason := ""
		if r.Payload != nil {
			if r.Payload.Approve != nil {
				approve = approve && *r.Payload.Approve
			}
			reason = r.Payload.Reason
		}
		if r.Status == "cancelled" && reason == "" {
			reason = "cancelled by the AG-UI client"
		}
		if len(reason) > maxReasonBytes {
			return invalid(fmt.Sprintf("resume[%d].payload.reason", i), fmt.Sprintf("%d bytes, more than the %d allowed", len(reason), maxReasonBytes))
		}
		if _, err := s.starter().Decide(ctx, id, contract.DecideArgs{ID: r.InterruptID, Approve: &approve, Reason: reason, By: caller(ctx)}); err != nil {
			return approvalProblem(id, err)
		}
	}
	return nil
}

// newestUserText is the text of the newest user message.
func newestUserText(messages []aguiMessage) (string, *Problem) {
	for i := len(messages) - 1; i >= 0; i-- {
		m := messages[i]
		if m.Role != "user" {
			continue
		}
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			return text, nil
		}
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(m.Content, &parts) == nil {
			var b strings.Builder
			for _, p := range parts {
				if p.Type == "text" {
					b.WriteString(p.Text)
				}
			}
			return b.String(), nil
		}
		return "", invalid(fmt.Sprintf("messages[%d].content", i), "must be a string or text parts")
	}
	return "", invalid("messages", "no user message: the run needs one to answer")
}

// lastMessageID names the AG-UI run's newest message: a repeated request
// sends its input once (the send update's ID).
func lastMessageID(messages []aguiMessage) string {
	if len(messages) == 0 {
		return ""
	}
	return messages[len(messages)-1].ID
}

// serveAGUI writes the AG-UI run: RUN_STARTED, then the run's events
// after after, translated, up to RUN_FINISHED or RUN_ERROR.
func (s *server) serveAGUI(ctx context.Context, out *eventStream, r *aguiRelay, after int64) {
	defer out.end()
	r.out = out
	if !r.send(aguiEvent{"type": "RUN_STARTED", "threadId": r.threadID, "runId": r.aguiRunID,
		"metadata": map[string]any{"agenttask": map[string]any{"runId": r.runID}}}) {
		return
	}
	if len(r.waiting) > 0 { // asked before, and not answered by this AG-UI run
		r.endWaiting(r.waiting)
		return
	}
	fctx, cancel := context.WithTimeout(ctx, followTimeout)
	f, err := s.cfg.Broker.Follow(fctx, r.runID, after)
	cancel()
	if err != nil {
		r.send(aguiEvent{"type": "RUN_ERROR", "message": "reading the run's events: " + err.Error(), "code": CodeInternal})
		return
	}
	defer f.Close()
	events, failed := nextEvents(ctx, f)
	keep := time.NewTicker(s.cfg.KeepAlive)
	defer keep.Stop()
	for {
		select {
		case e := <-events:
			if !r.relay(ctx, e) {
				return
			}
		case <-keep.C:
			if out.keepAlive() != nil {
				return
			}
		case err := <-failed:
			msg := "the run's events stopped: " + err.Error()
			if ctx.Err() != nil {
				msg = fmt.Sprintf("run %s did not finish within %s; it goes on: a later AG-UI run on the thread, or GET /v1/runs/%s/messages, reads it", r.runID, s.cfg.RunTimeout, r.runID)
			}
			r.closeOpen()
			r.send(aguiEvent{"type": "RUN_ERROR", "message": msg, "code": CodeRunTimeout})
			return
		}
	}
}

// aguiSend writes one AG-UI event as a server-sent event.
func (o *eventStream) aguiSend(e aguiEvent) error {
	return o.send(sse.Message{Data: e})
}
