package tasksapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/a2a"
	"github.com/agenttask/agenttask/internal/taskdef"
)

// Every enabled stored task is an A2A v1.0 agent at /a2a/{name}/
// (docs/a2a.md): its card at .well-known/agent-card.json, its JSON-RPC
// endpoint at the base URL. The mapping: an A2A context is one of our runs
// (a conversation); an A2A task is one exchange of it, the turn that
// answers one message (its ID the run's and the turn's, "<run>-x<turn>");
// TASK_STATE_INPUT_REQUIRED is the run waiting for a person's decision,
// answered by a message to the same task; the answer is the task's
// artifact. A completed task takes no more messages: the next message of
// the context is the next exchange.

// a2aPoll spaces the reads of a run's state while a call waits for it.
const a2aPoll = 250 * time.Millisecond

// a2aCancelWait bounds how long CancelTask waits for the turn to end.
const a2aCancelWait = 30 * time.Second

func (s *server) registerA2A(mux *http.ServeMux) {
	mux.Handle("GET /a2a/{name}/.well-known/agent-card.json", s.keyed(http.HandlerFunc(s.a2aCard), PermCall, PermView))
	mux.Handle("POST /a2a/{name}/{$}", s.keyed(http.HandlerFunc(s.a2aRPC), PermCall))
}

// a2aCard serves the task's agent card: its name, description, the
// JSON-RPC interface, a skill from the task, bearer keys as the security
// scheme. Never the prompt's text.
func (s *server) a2aCard(w http.ResponseWriter, r *http.Request) {
	d, err := s.a2aDefinition(r.Context(), r.PathValue("name"))
	if err != nil {
		writeProblem(w, err)
		return
	}
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	base := fmt.Sprintf("%s://%s/a2a/%s/", scheme, r.Host, d.Name)
	desc := d.Description
	if desc == "" {
		desc = fmt.Sprintf("The stored task %q.", d.Name)
	}
	out := []string{"text/plain"}
	if d.JSON {
		out = append(out, "application/json")
	}
	tags := []string{"agenttask"}
	card := map[string]any{
		"name": d.Name, "description": desc, "version": "1",
		"supportedInterfaces":  []map[string]any{{"url": base, "protocolBinding": "JSONRPC", "protocolVersion": a2a.Version}},
		"capabilities":         map[string]any{"streaming": true, "pushNotifications": s.push != nil},
		"securitySchemes":      map[string]any{"bearer": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "Bearer", "description": "A key of the Tasks API (API_KEYS)"}}},
		"securityRequirements": []map[string]any{{"schemes": map[string]any{"bearer": map[string]any{"list": []string{}}}}},
		"defaultInputModes":    []string{"text/plain"}, "defaultOutputModes": out,
		"skills": []map[string]any{{"id": d.Name, "name": d.Name, "description": desc, "tags": tags, "inputModes": []string{"text/plain"}, "outputModes": out}},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(card)
}

// a2aDefinition is the enabled stored task name.
func (s *server) a2aDefinition(ctx context.Context, name string) (taskdef.Definition, error) {
	d, err := s.storedDefinition(ctx, name)
	if err != nil {
		return d, err
	}
	if d.Enabled != nil && !*d.Enabled {
		return d, problem(CodeTaskDisabled, fmt.Sprintf("task %q is disabled; a developer enables it with PUT", d.Name), "")
	}
	return d, nil
}

// a2aRPC answers one JSON-RPC request.
func (s *server) a2aRPC(w http.ResponseWriter, r *http.Request) {
	var req a2a.RPCRequest
	body := http.MaxBytesReader(w, r.Body, maxAGUIBody)
	if err := json.NewDecoder(body).Decode(&req); err != nil {
		writeRPC(w, a2a.RPCResponse{Error: &a2a.RPCError{Code: a2a.CodeParseError, Message: "the body must be a JSON-RPC 2.0 request: " + err.Error()}})
		return
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		writeRPC(w, a2a.RPCResponse{ID: req.ID, Error: &a2a.RPCError{Code: a2a.CodeInvalidRequest, Message: `a JSON-RPC 2.0 request has "jsonrpc": "2.0" and a method`}})
		return
	}
	d, err := s.a2aDefinition(r.Context(), r.PathValue("name"))
	if err != nil {
		writeRPC(w, a2a.RPCResponse{ID: req.ID, Error: &a2a.RPCError{Code: a2a.CodeTaskNotFound, Message: problemText(err)}})
		return
	}
	ctx := r.Context()
	var result any
	switch req.Method {
	case "SendMessage", "message/send":
		result, err = s.a2aSend(ctx, d, req.Params, false, nil)
	case "SendStreamingMessage", "message/stream":
		stream := newRPCStream(w, req.ID)
		if _, err = s.a2aSend(ctx, d, req.Params, true, stream); err != nil {
			if stream.started {
				stream.send(nil, asRPCError(err))
			} else {
				writeRPC(w, a2a.RPCResponse{ID: req.ID, Error: asRPCError(err)})
			}
		}
		return
	case "GetTask", "tasks/get":
		var p a2a.TaskParams
		if err = json.Unmarshal(req.Params, &p); err == nil {
			result, err = s.a2aGet(ctx, d, p.ID)
		}
	case "CancelTask", "tasks/cancel":
		var p a2a.TaskParams
		if err = json.Unmarshal(req.Params, &p); err == nil {
			result, err = s.a2aCancel(ctx, d, p.ID)
		}
	case "SubscribeToTask", "tasks/resubscribe":
		stream := newRPCStream(w, req.ID)
		var p a2a.TaskParams
		if err = json.Unmarshal(req.Params, &p); err == nil {
			err = s.a2aSubscribe(ctx, d, p.ID, stream)
		}
		if err != nil {
			if stream.started {
				stream.send(nil, asRPCError(err))
			} else {
				writeRPC(w, a2a.RPCResponse{ID: req.ID, Error: asRPCError(err)})
			}
		}
		return
	case "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig":
		result, err = s.a2aPushMethod(ctx, d, req.Method, req.Params) // a2apush.go
	default:
		err = &a2a.RPCError{Code: a2a.CodeMethodNotFound, Message: fmt.Sprintf("no method %q: SendMessage, SendStreamingMessage, GetTask, CancelTask and SubscribeToTask are served", req.Method)}
	}
	if err != nil {
		writeRPC(w, a2a.RPCResponse{ID: req.ID, Error: asRPCError(err)})
		return
	}
	writeRPC(w, a2a.RPCResponse{ID: req.ID, Result: result})
}

// a2aSend takes a message: a new context's first (a run started), the
// next of a context (an input sent), or the answer to an input-required
// task (its approvals decided). It waits, as A2A asks, until the exchange
// ends or needs input (bounded by the API's RunTimeout); streamed, it
// writes the task's events meanwhile.
func (s *server) a2aSend(ctx context.Context, d taskdef.Definition, raw json.RawMessage, streamed bool, out *rpcStream) (any, error) {
	var p a2a.SendParams
	if err := json.Unmarshal(raw, &p); err != nil || p.Message == nil {
		return nil, &a2a.RPCError{Code: a2a.CodeInvalidParams, Message: `params need a "message" with "parts"`}
	}
	m := *p.Message
	var runID string
	var turn int
	var err error
	switch {
	case m.TaskID != "":
		runID, turn, err = s.a2aAnswer(ctx, d, m)
	case m.ContextID != "":
		runID, turn, err = s.a2aFollowUp(ctx, d, m)
	default:
		runID, turn, err = s.a2aStart(ctx, d, m)
	}
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.RunTimeout)
	defer cancel()
	if !streamed {
		if p.Configuration != nil && p.Configuration.ReturnImmediately {
			t, err := s.a2aExchange(ctx, runID, turn)
			return map[string]any{"task": t}, err
		}
		t, err := s.a2aAwait(wctx, runID, turn, nil)
		return map[string]any{"task": t}, err
	}
	_, err = s.a2aAwait(wctx, runID, turn, out)
	return nil, err
}

// a2aStart starts the context's run with the message as its input and
// metadata.variables as its open variables.
func (s *server) a2aStart(ctx context.Context, d taskdef.Definition, m a2a.Message) (string, int, error) {
	text := m.Text()
	req := taskdef.RunRequest{Input: &text, Variables: a2aVariables(m.Metadata)}
	if fe := taskdef.CheckRun(d, req); fe != nil {
		return "", 0, &a2a.RPCError{Code: a2a.CodeInvalidParams, Message: a2aField(fe.Field) + ": " + fe.Detail}
	}
	args, input, err := s.runInput(ctx, d, req)
	if err != nil {
		return "", 0, err
	}
	id, err := s.runID(ctx, d.Name, "a2a:"+m.MessageID)
	if err != nil {
		return "", 0, err
	}
	if _, err := s.startRun(ctx, id, true, d, args, input, true); err != nil {
		return "", 0, runProblem(err)
	}
	return id, 1, nil
}

// a2aFollowUp sends the message into its context's run: the next
// exchange. A context whose exchange still runs takes none.
func (s *server) a2aFollowUp(ctx context.Context, d taskdef.Definition, m a2a.Message) (string, int, error) {
	id := m.ContextID
	if err := s.a2aOwn(ctx, d, id); err != nil {
		return "", 0, err
	}
	var st contract.Status
	if err := s.query(ctx, id, &st, contract.QueryStatus); err != nil {
		return "", 0, err
	}
	if st.State != contract.StateWaiting || st.Queued > 0 {
		return "", 0, &a2a.RPCError{Code: a2a.CodeUnsupportedOperation, Message: fmt.Sprintf("the context's task %s is %s: answer it (taskId) or wait for it to end before the next message", a2aTaskID(id, st.Turns), st.State)}
	}
	text := m.Text()
	if max := derefInt(d.Input.MaxBytes); len(text) == 0 || len(text) > max {
		return "", 0, &a2a.RPCError{Code: a2a.CodeInvalidParams, Message: fmt.Sprintf("message.parts: the text must be 1 to %d bytes (the task's input.maxBytes)", max)}
	}
	h, err := s.cfg.Store.C.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: contract.UpdateSend,
		UpdateID: "a2a-" + m.MessageID, Args: []any{contract.TaskIO{Message: contract.TextParts(text)}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		var receipt contract.SendResult
		err = h.Get(ctx, &receipt)
	}
	if err != nil {
		return "", 0, closedOr(err)
	}
	return id, st.Turns + 1, nil
}

// a2aAnswer answers an input-required task: a data part {"approve": bool,
// "reason"?: string}, or text that starts with yes, approve or ok
// (anything else refuses, the text as the reason), decides every approval
// the run waits for.
func (s *server) a2aAnswer(ctx context.Context, d taskdef.Definition, m a2a.Message) (string, int, error) {
	id, turn, ok := parseA2ATaskID(m.TaskID)
	if !ok {
		return "", 0, &a2a.RPCError{Code: a2a.CodeTaskNotFound, Message: fmt.Sprintf("no task %q", m.TaskID)}
	}
	if err := s.a2aOwn(ctx, d, id); err != nil {
		return "", 0, err
	}
	t, err := s.a2aExchange(ctx, id, turn)
	if err != nil {
		return "", 0, err
	}
	if t.Status.State != a2a.StateInputRequired {
		return "", 0, &a2a.RPCError{Code: a2a.CodeUnsupportedOperation, Message: fmt.Sprintf("task %s is %s: only an input-required task takes a message", m.TaskID, t.Status.State)}
	}
	approve, reason := a2aDecision(m)
	list, err := s.starter().Approvals(ctx, id)
	if err != nil {
		return "", 0, approvalProblem(id, err)
	}
	for _, a := range list {
		if a.Decision != nil || a.Client {
			continue
		}
		d := contract.DecideArgs{ID: a.ID, Approve: &approve, Reason: reason, By: caller(ctx)}
		if a.Question != "" {
			d = a2aReply(m, d)
		}
		if _, err := s.starter().Decide(ctx, id, d); err != nil {
			return "", 0, approvalProblem(id, err)
		}
	}
	return id, turn, nil
}

// a2aReply reads an answer to a remote agent's question: its text is the
// reply (decide's result), unless a data part refuses ({"approve": false}).
func a2aReply(m a2a.Message, d contract.DecideArgs) contract.DecideArgs {
	for _, p := range m.Parts {
		var v struct {
			Approve *bool `json:"approve"`
		}
		if len(p.Data) > 0 && json.Unmarshal(p.Data, &v) == nil && v.Approve != nil && !*v.Approve {
			return d // refused, with the reason a2aDecision read
		}
	}
	yes := true
	d.Approve, d.Reason = &yes, ""
	if reply := strings.TrimSpace(m.Text()); reply != "" {
		reply = truncateBytes(reply, contract.MaxClientResultBytes)
		d.Result = &reply
	}
	return d
}

// a2aDecision reads an answer to an input-required task.
func a2aDecision(m a2a.Message) (bool, string) {
	for _, p := range m.Parts {
		var v struct {
			Approve *bool  `json:"approve"`
			Reason  string `json:"reason"`
		}
		if len(p.Data) > 0 && json.Unmarshal(p.Data, &v) == nil && v.Approve != nil {
			return *v.Approve, truncateBytes(v.Reason, maxReasonBytes)
		}
	}
	text := strings.TrimSpace(m.Text())
	lower := strings.ToLower(text)
	for _, yes := range []string{"yes", "approve", "ok"} {
		if strings.HasPrefix(lower, yes) {
			return true, truncateBytes(text, maxReasonBytes)
		}
	}
	return false, truncateBytes(text, maxReasonBytes)
}

// a2aOwn checks that run id is a context of task d started by this API.
func (s *server) a2aOwn(ctx context.Context, d taskdef.Definition, id string) error {
	task, err := s.ownRun(ctx, id)
	if err != nil {
		return &a2a.RPCError{Code: a2a.CodeTaskNotFound, Message: problemText(err)}
	}
	if task != d.Name {
		return &a2a.RPCError{Code: a2a.CodeTaskNotFound, Message: fmt.Sprintf("context %s is not a conversation of %s", id, d.Name)}
	}
	return nil
}

// a2aSubscribe is SubscribeToTask: the task as it is, then its changes
// until it ends or needs input (bounded by the API's RunTimeout). A task
// that has ended has nothing to follow (UnsupportedOperation, as A2A says).
func (s *server) a2aSubscribe(ctx context.Context, d taskdef.Definition, taskID string, out *rpcStream) error {
	t, err := s.a2aGet(ctx, d, taskID)
	if err != nil {
		return err
	}
	if t.Terminal() {
		return &a2a.RPCError{Code: a2a.CodeUnsupportedOperation, Message: fmt.Sprintf("task %s is %s: an ended task has no changes to follow; read it with GetTask", taskID, t.Status.State)}
	}
	id, turn, _ := parseA2ATaskID(taskID)
	out.send(map[string]any{"task": t}, nil)
	wctx, cancel := context.WithTimeout(ctx, s.cfg.RunTimeout)
	defer cancel()
	_, err = s.a2aFollow(wctx, id, turn, out, t)
	return err
}

// a2aAwait reads the exchange until it ends or needs input (or ctx ends:
// the task as it is then), writing each change to out when streamed.
func (s *server) a2aAwait(ctx context.Context, id string, turn int, out *rpcStream) (a2a.Task, error) {
	return s.a2aFollow(ctx, id, turn, out, a2a.Task{})
}

// a2aFollow is a2aAwait after the stream showed last (zero: nothing yet,
// and the stream opens with the task working).
func (s *server) a2aFollow(ctx context.Context, id string, turn int, out *rpcStream, last a2a.Task) (a2a.Task, error) {
	for first := last.ID == ""; ; first = false {
		t, err := s.a2aExchange(context.WithoutCancel(ctx), id, turn)
		if err != nil {
			return t, err
		}
		if out != nil {
			if first {
				// The stream opens with the task as the message found it,
				// working; what it is now follows as updates.
				started := a2a.Task{ID: t.ID, ContextID: t.ContextID, Metadata: t.Metadata, Status: a2a.Status{State: a2a.StateWorking, Timestamp: t.Status.Timestamp}}
				out.send(map[string]any{"task": started}, nil)
				last = started
			}
			if t.Status.State != last.Status.State {
				if t.Terminal() {
					for _, a := range t.Artifacts {
						out.send(map[string]any{"artifactUpdate": a2a.ArtifactUpdate{TaskID: t.ID, ContextID: t.ContextID, Artifact: a, LastChunk: true}}, nil)
					}
				}
				out.send(map[string]any{"statusUpdate": a2a.StatusUpdate{TaskID: t.ID, ContextID: t.ContextID, Status: t.Status}}, nil)
			}
		}
		last = t
		if t.Terminal() || t.Status.State == a2a.StateInputRequired {
			return t, nil
		}
		select {
		case <-ctx.Done():
			return t, nil
		case <-time.After(a2aPoll):
		}
	}
}

// a2aGet is GetTask.
func (s *server) a2aGet(ctx context.Context, d taskdef.Definition, taskID string) (a2a.Task, error) {
	id, turn, ok := parseA2ATaskID(taskID)
	if !ok {
		return a2a.Task{}, &a2a.RPCError{Code: a2a.CodeTaskNotFound, Message: fmt.Sprintf("no task %q", taskID)}
	}
	if err := s.a2aOwn(ctx, d, id); err != nil {
		return a2a.Task{}, err
	}
	return s.a2aExchange(ctx, id, turn)
}

// a2aCancel is CancelTask: cancel-turn for the exchange's turn, then the
// task once its turn has ended.
func (s *server) a2aCancel(ctx context.Context, d taskdef.Definition, taskID string) (a2a.Task, error) {
	t, err := s.a2aGet(ctx, d, taskID)
	if err != nil {
		return t, err
	}
	if t.Terminal() {
		return t, &a2a.RPCError{Code: a2a.CodeTaskNotCancelable, Message: fmt.Sprintf("task %s is %s already", taskID, t.Status.State)}
	}
	id, turn, _ := parseA2ATaskID(taskID)
	if err := s.cfg.Store.C.SignalWorkflow(ctx, id, "", contract.SignalCancelTurn, contract.CancelTurnArgs{Turn: turn}); err != nil {
		return t, closedOr(err)
	}
	wctx, cancel := context.WithTimeout(ctx, a2aCancelWait)
	defer cancel()
	for !t.Terminal() && wctx.Err() == nil {
		select {
		case <-wctx.Done():
		case <-time.After(a2aPoll):
		}
		if t, err = s.a2aExchange(ctx, id, turn); err != nil {
			return t, err
		}
	}
	return t, nil
}

// a2aExchange is exchange turn of run id as an A2A task, read from the
// run's status, approvals and messages.
func (s *server) a2aExchange(ctx context.Context, id string, turn int) (a2a.Task, error) {
	t := a2a.Task{ID: a2aTaskID(id, turn), ContextID: id, Metadata: map[string]any{"agenttask/runId": id, "agenttask/turn": turn}}
	var st contract.Status
	if err := s.query(ctx, id, &st, contract.QueryStatus); err != nil {
		return t, &a2a.RPCError{Code: a2a.CodeTaskNotFound, Message: problemText(err)}
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	t.Status = a2a.Status{State: a2a.StateWorking, Timestamp: now}
	info, canceledBefore := turnInfo(st, turn)
	switch {
	case info != nil && info.Canceled:
		t.Status.State = a2a.StateCanceled
	case info != nil && info.StopReason != "" || (st.Turns > turn) || (info == nil && st.Turns >= turn && st.State == contract.StateWaiting):
		t.Status.State = a2a.StateCompleted
		answer, err := s.a2aAnswerOf(ctx, id, turn-canceledBefore)
		if err != nil {
			return t, err
		}
		t.Artifacts = []a2a.Artifact{answer}
	case st.State == contract.StateFailed:
		t.Status.State = a2a.StateFailed
		if st.Error != nil {
			msg := a2a.TextPart(st.Error.Type + ": " + st.Error.Message)
			t.Status.Message = &a2a.Message{MessageID: t.ID + "-error", ContextID: id, TaskID: t.ID, Role: json.RawMessage(`"` + a2a.RoleAgent + `"`), Parts: []a2a.Part{msg}}
		}
	case st.Turns == turn && st.State == contract.StateAwaitingApproval:
		t.Status.State = a2a.StateInputRequired
		list, err := s.starter().Approvals(ctx, id)
		if err != nil {
			return t, approvalProblem(id, err)
		}
		var lines []string
		var pending []contract.Approval
		for _, a := range list {
			switch {
			case a.Decision != nil || a.Client:
			case a.Question != "": // a remote agent's, relayed (an a2a capability)
				lines = append(lines, fmt.Sprintf("%s asks: %s (your answer is sent to it)", a.Capability, truncateBytes(a.Question, 1000)))
				pending = append(pending, a)
			default:
				lines = append(lines, fmt.Sprintf("%s wants to run with %s", a.Capability, truncateBytes(string(a.Arguments), 500)))
				pending = append(pending, a)
			}
		}
		data, _ := json.Marshal(map[string]any{"approvals": pending})
		t.Status.Message = &a2a.Message{MessageID: fmt.Sprintf("%s-input-%d", t.ID, len(pending)), ContextID: id, TaskID: t.ID, Role: json.RawMessage(`"` + a2a.RoleAgent + `"`),
			Parts: []a2a.Part{a2a.TextPart("A person must decide: " + strings.Join(lines, "; ") + `. Answer with "approve" or "deny" (or a data part {"approve": true|false, "reason": "..."}).`),
				{Data: data, MediaType: "application/json"}}}
	}
	return t, nil
}

// turnInfo is turn's info as status shows it (nil when it is not among the
// recent turns) and how many turns before it were canceled (they have no
// output).
func turnInfo(st contract.Status, turn int) (*contract.TurnInfo, int) {
	var info *contract.TurnInfo
	canceled := 0
	for i := range st.RecentTurns {
		ti := &st.RecentTurns[i]
		if ti.Turn == turn {
			info = ti
		} else if ti.Turn < turn && ti.Canceled {
			canceled++
		}
	}
	if info == nil && st.LastTurn != nil && st.LastTurn.Turn == turn {
		info = st.LastTurn
	}
	return info, canceled
}

// a2aAnswerOf is the n-th output of run id as the task's artifact: its
// text, and a JSON answer as a data part too.
func (s *server) a2aAnswerOf(ctx context.Context, id string, n int) (a2a.Artifact, error) {
	a := a2a.Artifact{ArtifactID: "answer", Name: "answer"}
	var msgs []contract.Message
	if err := s.queryMessages(ctx, id, &msgs, contract.MessagesPage{}); err != nil {
		return a, err
	}
	seen := 0
	for _, m := range msgs {
		if m.Type != contract.TypeOutput {
			continue
		}
		if seen++; seen == n {
			text := contract.TextOf(m.TaskIO)
			a.Parts = []a2a.Part{a2a.TextPart(text)}
			if t := strings.TrimSpace(text); json.Valid([]byte(t)) && strings.HasPrefix(t, "{") {
				a.Parts = append(a.Parts, a2a.Part{Data: json.RawMessage(t), MediaType: "application/json"})
			}
			return a, nil
		}
	}
	a.Parts = []a2a.Part{a2a.TextPart("")}
	return a, nil
}

// runIDRE is the shape of a run's ID.
var runIDRE = regexp.MustCompile(`^run-[a-z2-7]{26}$`)

// a2aTaskID names exchange turn of run id; parseA2ATaskID reads it back.
func a2aTaskID(id string, turn int) string { return fmt.Sprintf("%s-x%d", id, turn) }

func parseA2ATaskID(s string) (string, int, bool) {
	i := strings.LastIndex(s, "-x")
	if i < 0 {
		return "", 0, false
	}
	turn, err := strconv.Atoi(s[i+2:])
	if err != nil || turn < 1 || !runIDRE.MatchString(s[:i]) {
		return "", 0, false
	}
	return s[:i], turn, true
}

// a2aVariables are metadata.variables, the task's open variables.
func a2aVariables(meta map[string]any) map[string]string {
	vars, _ := meta["variables"].(map[string]any)
	out := map[string]string{}
	for k, v := range vars {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// a2aField names a run request's field as A2A sends it.
func a2aField(f string) string {
	switch {
	case f == "input":
		return "message.parts"
	case strings.HasPrefix(f, "variables"):
		return "message.metadata." + f
	}
	return f
}

// asRPCError is err as a JSON-RPC error.
func asRPCError(err error) *a2a.RPCError {
	if e, ok := err.(*a2a.RPCError); ok {
		return e
	}
	if p, ok := err.(*Problem); ok {
		code := a2a.CodeInternalError
		switch p.Status {
		case http.StatusBadRequest:
			code = a2a.CodeInvalidParams
		case http.StatusNotFound, http.StatusConflict:
			code = a2a.CodeTaskNotFound
		}
		return &a2a.RPCError{Code: code, Message: problemText(p)}
	}
	return &a2a.RPCError{Code: a2a.CodeInternalError, Message: err.Error()}
}

func writeRPC(w http.ResponseWriter, r a2a.RPCResponse) {
	r.JSONRPC = "2.0"
	if r.ID == nil {
		r.ID = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(r)
}

// writeProblem writes err as a problem document.
func writeProblem(w http.ResponseWriter, err error) {
	p, ok := err.(*Problem)
	if !ok {
		p = problem(CodeInternal, err.Error(), "")
	}
	w.Header().Set("Content-Type", p.ContentType(""))
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// rpcStream writes a streamed method's responses as server-sent events.
type rpcStream struct {
	w       http.ResponseWriter
	id      json.RawMessage
	started bool
}

func newRPCStream(w http.ResponseWriter, id json.RawMessage) *rpcStream {
	return &rpcStream{w: w, id: id}
}

func (o *rpcStream) send(result any, e *a2a.RPCError) {
	if !o.started {
		o.w.Header().Set("Content-Type", "text/event-stream")
		o.w.Header().Set("Cache-Control", "no-cache")
		o.w.WriteHeader(http.StatusOK)
		o.started = true
	}
	b, _ := json.Marshal(a2a.RPCResponse{JSONRPC: "2.0", ID: o.id, Result: result, Error: e})
	fmt.Fprintf(o.w, "data: %s\n\n", b)
	if f, ok := o.w.(http.Flusher); ok {
		f.Flush()
	}
}
