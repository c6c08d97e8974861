package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/workflows"
	"github.com/agenttask/agenttask/starter"
)

// chat --agent JSON|FILE [--input TEXT] [--task-id ID] | chat TASK_ID
// [--mount NAME]: an interactive conversation in the terminal.
//
// Each line typed is sent as an input (the send update). The answer is
// printed as it is written when the task streams and the broker is at hand
// (AGENT_NATS_URL): the text events of runs.<task ID>. A task that does not
// stream (an agent with capabilities, exposes, a mount or an output cannot:
// workflows' checkStream) is polled: its answer prints whole once committed.
// Either way the messages query is polled for the read receipts (an input
// sent while a turn runs shows "queued", then "committed <instant>") and
// the approvals query for pending approvals, asked in place.
func chatFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.agent, "agent", "", "start a new conversation with this agent: inline JSON, a file")
	fs.StringVar(&o.input, "input", "", "the new conversation's first input, as text")
	fs.StringVar(&o.taskID, "task-id", "", "the new task's ID; generated when left out")
	fs.StringVar(&o.idleTimeout, "idle-timeout", "", "end the conversation idle this long, e.g. 30m")
	fs.StringVar(&o.mount, "mount", "", "for /files: the agent's mount by its name in AGENT_MOUNTS (default: the agent's own)")
}

// chatPoll is how often the task is asked for its messages and approvals.
const chatPoll = 250 * time.Millisecond

func chat(x *cli, pos []string) (any, error) {
	id, err := chatTaskID(x, pos)
	if err != nil {
		return nil, err
	}
	var args workflows.StartArgs
	var agent *contract.AgentSpec
	if x.set["agent"] {
		a, err := x.chatStartArgs()
		if err != nil {
			return nil, err
		}
		args, agent = a, &a.Agent
	}
	c, err := x.client()
	if err != nil {
		return nil, err
	}
	// The chat owns Ctrl-C: the first cancels the running turn, a second
	// within 2 s leaves. Its context is the command's without the cancel
	// main's NotifyContext does on the first interrupt.
	ctx, cancel := context.WithCancel(context.WithoutCancel(x.ctx))
	defer cancel()
	ints := make(chan os.Signal, 2)
	signal.Notify(ints, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(ints)

	s := &chatSession{x: x, c: c, out: x.stdout, agent: agent, sent: map[string]bool{}, asked: map[string]bool{}}
	if err := s.open(ctx, id, args); err != nil {
		return nil, err
	}
	if err := s.load(ctx, agent == nil); err != nil {
		return nil, err
	}
	go s.follow(ctx)
	go s.poll(ctx)
	s.converse(ctx, ints)
	return noOutput{}, nil
}

// chatTaskID checks the command line before anything is dialed: --agent
// (a new conversation) or one TASK_ID (a running one, joined as it is).
// It returns that task ID, empty for a new conversation.
func chatTaskID(x *cli, pos []string) (string, error) {
	switch {
	case x.set["agent"] && len(pos) > 0:
		return "", usagef("chat: give --agent (a new conversation) or TASK_ID (a running one), not both")
	case !x.set["agent"] && len(pos) == 0:
		return "", usagef("chat: give --agent JSON|FILE to start a conversation, or the TASK_ID of a running one")
	case len(pos) > 1:
		return "", usagef("chat: unexpected arguments after the task ID: %q", pos[1:])
	case len(pos) == 1:
		for _, f := range []string{"input", "task-id", "idle-timeout"} {
			if x.set[f] {
				return "", usagef("chat: --%s is for a new conversation (--agent); a running task is joined as it is", f)
			}
		}
		return pos[0], nil
	}
	return "", nil
}

// open starts the new conversation (s.agent set) or joins task id, says
// which, and prints how to talk.
func (s *chatSession) open(ctx context.Context, id string, args workflows.StartArgs) error {
	var err error
	if s.agent != nil {
		id, err = s.start(ctx, args)
	} else {
		err = s.join(ctx, id)
	}
	if err != nil {
		return err
	}
	s.id = id
	s.printf("· type a message and Enter; /files PATH attaches a file to the next message; Ctrl-C cancels a turn; Ctrl-C twice, Ctrl-D or /quit leaves (the task goes on: starter close %s ends it)\n", id)
	return nil
}

// start starts the new conversation and returns its task ID. A first
// input (--input) is remembered as sent, so its receipt shows on the
// first committed entry.
func (s *chatSession) start(ctx context.Context, args workflows.StartArgs) (string, error) {
	id, err := s.c.Start(ctx, args.StartArgs, starter.StartOptions{TaskID: s.x.opt.taskID})
	if err != nil {
		return "", err
	}
	s.printf("· started task %s (agent %s, %s)\n", id, s.agent.Name, map[bool]string{true: "streamed", false: "not streamed: answers print whole"}[args.Stream])
	if args.Input != nil {
		s.sent[""] = true // the first input: its receipt is the first entry's
		s.pendingFirst = true
	}
	return id, nil
}

// join says where a running task stands.
func (s *chatSession) join(ctx context.Context, id string) error {
	st, err := s.c.Status(ctx, id)
	if err != nil {
		return err
	}
	s.printf("· joined task %s (%s, %d turns)\n", id, st.State, st.Turns)
	return nil
}

// converse reads the typed lines until /quit, end of input (Ctrl-D),
// SIGTERM or a second Ctrl-C within 2 s, then says the chat is left. Lines
// are handled one at a time, off this loop that owns the signals, so a
// slow send or upload never keeps Ctrl-C from working: the first cancels
// the line being handled and the running turn.
func (s *chatSession) converse(ctx context.Context, ints <-chan os.Signal) {
	var cur lineInFlight
	done := make(chan struct{})
	go s.readLines(ctx, &cur, done)
	var lastInt time.Time
	for {
		select {
		case sig := <-ints:
			if sig == syscall.SIGTERM || time.Since(lastInt) < 2*time.Second {
				s.leave()
				return
			}
			lastInt = time.Now()
			cur.cancel()
			s.cancelTurn(ctx)
		case <-done:
			s.leave()
			return
		}
	}
}

// readLines handles each line typed, one at a time, until /quit, the end
// of input or ctx ends; then it closes done.
func (s *chatSession) readLines(ctx context.Context, cur *lineInFlight, done chan<- struct{}) {
	defer close(done)
	sc := bufio.NewScanner(s.x.stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "/quit" || ctx.Err() != nil {
			return
		}
		lctx, lcancel := context.WithCancel(ctx)
		cur.set(lcancel)
		s.line(lctx, line)
		cur.set(nil)
		lcancel()
	}
}

// lineInFlight is the cancel of the line being handled, if any: set by
// the reader, called by the signal loop on Ctrl-C.
type lineInFlight struct {
	mu sync.Mutex
	fn context.CancelFunc
}

func (l *lineInFlight) set(fn context.CancelFunc) {
	l.mu.Lock()
	l.fn = fn
	l.mu.Unlock()
}

func (l *lineInFlight) cancel() {
	l.mu.Lock()
	if l.fn != nil {
		l.fn()
	}
	l.mu.Unlock()
}

// chatStartArgs builds a new conversation from --agent, --input,
// --idle-timeout: streamed when the agent can stream.
func (x *cli) chatStartArgs() (workflows.StartArgs, error) {
	var args workflows.StartArgs
	data, err := x.readJSON("--agent", x.opt.agent)
	if err != nil {
		return args, err
	}
	if err := decodeStrict(data, &args.Agent); err != nil {
		return args, contract.Invalid("--agent: not an agent object such as {\"name\": \"helper\", \"model\": \"openai/gpt-4o-mini\"}: %v", err)
	}
	if x.set["input"] {
		in := textInput(x.opt.input)
		args.Input = &in
	}
	args.Mode = contract.ModeConversation
	args.IdleTimeout = x.opt.idleTimeout
	a := args.Agent
	args.Stream = len(a.Capabilities) == 0 && len(a.Exposes) == 0 && a.Mount == nil && x.getenv(broker.EnvURL) != ""
	if args.Stream && x.set["task-id"] && workflows.CheckStreamID(x.opt.taskID) != nil {
		args.Stream = false // an ID that names no broker subject: poll instead
	}
	if _, err := workflows.CheckStart(&args); err != nil {
		return args, err
	}
	return args, nil
}

// chatSession is one chat: what has been shown, what waits.
type chatSession struct {
	x     *cli
	c     *starter.Client
	out   io.Writer
	id    string
	agent *contract.AgentSpec

	mu           sync.Mutex
	shown        int             // committed entries shown
	sent         map[string]bool // received_at of our inputs not yet committed
	pendingFirst bool
	asked        map[string]bool        // approvals asked about
	approval     *contract.Approval     // the one the next line answers
	streamed     bool                   // a streamed answer is being printed
	awaiting     int                    // streamed answers done, not yet seen committed
	canceled     int                    // the last canceled turn shown
	attach       []contract.ContentPart // /files parts for the next input
	mid          bool                   // a streamed answer is mid-line
	state        contract.State
}

func stamp(ts string) string {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return ts
	}
	return t.Local().Format("15:04:05.000")
}

func (s *chatSession) printf(format string, a ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.printfLocked(format, a...)
}

func (s *chatSession) printfLocked(format string, a ...any) {
	if s.mid {
		fmt.Fprint(s.out, "\n")
		s.mid = false
	}
	fmt.Fprintf(s.out, format, a...)
}

// load shows the conversation so far when joining; a new task shows its
// entries as they come.
func (s *chatSession) load(ctx context.Context, show bool) error {
	if !show {
		return nil
	}
	ms, err := s.c.AllMessages(ctx, s.id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range ms {
		if m.CommittedAt == "" {
			break
		}
		s.showLocked(m, true)
		s.shown++
	}
	return nil
}

func partsText(ps []contract.ContentPart) string {
	var b []string
	for _, p := range ps {
		switch {
		case p.Text != nil:
			b = append(b, *p.Text)
		case p.File != nil:
			b = append(b, fmt.Sprintf("[%s %s]", p.MimeType, *p.File))
		default:
			b = append(b, "["+p.MimeType+"]")
		}
	}
	return strings.Join(b, " ")
}

// showLocked prints a committed entry.
func (s *chatSession) showLocked(m contract.Message, history bool) {
	if m.Type == contract.TypeInput {
		if history {
			s.printfLocked("you    %s  %s\n", stamp(m.ReceivedAt), partsText(m.Message))
		}
		return
	}
	if s.awaiting > 0 && !history {
		s.awaiting--
		s.printfLocked("       (answer committed %s)\n", stamp(m.CommittedAt))
		return
	}
	s.printfLocked("agent  %s  %s\n", stamp(m.CommittedAt), partsText(m.Message))
}

// poll reads the messages and approvals until ctx ends.
func (s *chatSession) poll(ctx context.Context) {
	t := time.NewTicker(chatPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if st, err := s.c.Status(ctx, s.id); err == nil {
			s.mu.Lock()
			if st.State != s.state && (st.State == contract.StateCompleted || st.State == contract.StateFailed || st.State == contract.StateCanceled) {
				s.printfLocked("· the task is %s\n", st.State)
			}
			s.state = st.State
			if lt := st.LastTurn; lt != nil && lt.Canceled && lt.Turn > s.canceled {
				s.canceled = lt.Turn
				s.streamed = false
				s.printfLocked("· turn %d canceled\n", lt.Turn)
			}
			s.mu.Unlock()
		}
		if ms, err := s.c.Messages(ctx, s.id, &contract.MessagesPage{After: s.shownCount()}); err == nil {
			s.entries(ms)
		}
		if as, err := s.c.Approvals(ctx, s.id); err == nil {
			s.approvals(as)
		}
	}
}

func (s *chatSession) shownCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shown
}

// entries shows newly committed entries: our inputs' read receipts, the answers.
func (s *chatSession) entries(ms []contract.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range ms {
		if m.CommittedAt == "" {
			return // queued inputs: not yet in the conversation
		}
		if m.Type == contract.TypeInput {
			key := m.ReceivedAt
			if s.pendingFirst && s.shown == 0 {
				key, s.pendingFirst = "", false
			}
			if key == "" && s.sent[key] {
				delete(s.sent, key)
				s.printfLocked("you    %s  %s (committed %s)\n", stamp(m.ReceivedAt), partsText(m.Message), stamp(m.CommittedAt))
			} else if s.sent[key] {
				delete(s.sent, key)
				s.printfLocked("       (received %s, committed %s)\n", stamp(m.ReceivedAt), stamp(m.CommittedAt))
			} else {
				s.printfLocked("input  %s  %s (committed %s)\n", stamp(m.ReceivedAt), partsText(m.Message), stamp(m.CommittedAt))
			}
		} else {
			s.showLocked(m, false)
		}
		s.shown++
	}
}

// approvals asks about each new pending approval, one at a time.
func (s *chatSession) approvals(as []contract.Approval) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.approval != nil {
		return
	}
	for i, a := range as {
		if a.Decision != nil || s.asked[a.ID] {
			continue
		}
		s.asked[a.ID] = true
		s.approval = &as[i]
		s.printfLocked("agent  %s  wants to call %s %s (approval %s)\napprove? [y/N/reason] ", stamp(a.RequestedAt), a.Capability, string(a.Arguments), a.ID)
		return
	}
}

// follow prints the streamed answer's text from the broker, when the task
// streams and AGENT_NATS_URL names the broker.
func (s *chatSession) follow(ctx context.Context) {
	url := s.x.getenv(broker.EnvURL)
	if url == "" || broker.CheckRunID(s.id) != nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	b, err := broker.Connect(cctx, url, "starter-chat")
	cancel()
	if err != nil {
		s.printf("· the broker is not reachable (%v): answers print whole\n", err)
		return
	}
	defer b.Close()
	// A new task's events are all read (the first turn may have begun
	// before the broker was reached); a joined task's answers so far are
	// shown from its messages, so its stream is read from now on.
	var after int64
	if s.agent == nil {
		after, _ = b.LastID(ctx, s.id)
	}
	f, err := b.Follow(ctx, s.id, after)
	if err != nil {
		s.printf("· cannot follow the stream (%v): answers print whole\n", err)
		return
	}
	defer f.Close()
	answer := 0
	for {
		e, err := f.Next(ctx)
		if err != nil {
			return
		}
		answer = s.streamEvent(e, answer)
	}
}

// streamEvent prints one event of the stream: text as it comes (a new
// answer number starts a new "agent" line), a turn's error, the end of an
// answer. answer is the number of the answer being printed; it returns
// the number after e.
func (s *chatSession) streamEvent(e broker.Event, answer int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Path != "" {
		if e.Type == broker.TypeSubtaskStarted {
			s.noteLocked("sub-task %s started", e.Path)
		}
		return answer // the rest of a sub-task's: its answer is the delegate call's result
	}
	if e.Wrapped {
		return answer // the model's text a reply wraps: the answer prints whole
	}
	switch e.Type {
	case broker.TypeToolCallStarted:
		s.noteLocked("calling %s %s", e.Tool.Name, string(e.Tool.Arguments))
	case broker.TypeToolCallFinished:
		mark := "→"
		if e.Tool.Error {
			mark = "✗"
		}
		s.noteLocked("%s %s %s", e.Tool.Name, mark, e.Tool.Result)
	case broker.TypeBudgetWaiting:
		s.noteLocked("waiting for a budget raise (/budget raises it)")
	case broker.TypeText:
		if !s.streamed || e.AnswerNumber() != answer {
			if s.streamed {
				s.printfLocked("       (answer cut short; again)\n")
			}
			s.printfLocked("agent  %s  ", time.Now().Format("15:04:05.000"))
			s.streamed, answer = true, e.AnswerNumber()
		}
		fmt.Fprint(s.out, e.Text)
		s.mid = true
	case broker.TypeError:
		if !e.Interrupted() {
			s.printfLocked("       (turn %d ended: %s %s)\n", e.Turn, e.Code, e.Message)
			s.streamed = false
		}
	case broker.TypeDone:
		if s.streamed {
			s.streamed = false
			s.awaiting++
		}
		if s.mid {
			fmt.Fprint(s.out, "\n")
			s.mid = false
		}
	}
	return answer
}

// noteLocked prints a line of what the task does, on a line of its own.
func (s *chatSession) noteLocked(format string, args ...any) {
	if s.mid {
		fmt.Fprint(s.out, "\n")
		s.mid = false
	}
	s.printfLocked("tool   %s\n", fmt.Sprintf(format, args...))
}

// line handles one typed line: an approval's answer, a command, an input.
func (s *chatSession) line(ctx context.Context, line string) {
	s.mu.Lock()
	a := s.approval
	s.approval = nil
	s.mu.Unlock()
	if a != nil {
		s.decide(ctx, a, strings.TrimSpace(line))
		return
	}
	t := strings.TrimSpace(line)
	switch {
	case t == "":
		return
	case strings.HasPrefix(t, "/files "):
		s.upload(ctx, strings.TrimSpace(strings.TrimPrefix(t, "/files ")))
		return
	case strings.HasPrefix(t, "/"):
		s.printf("· unknown command %s: /files PATH, /quit\n", strings.Fields(t)[0])
		return
	}
	in := textInput(line)
	s.mu.Lock()
	in.Message = append(in.Message, s.attach...)
	s.attach = nil
	s.mu.Unlock()
	res, err := s.c.Send(ctx, s.id, in)
	if err != nil {
		s.printf("· not sent: %v\n", err)
		return
	}
	st, _ := s.c.Status(ctx, s.id)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent[res.ReceivedAt] = true
	if st.Queued > 0 { // received, not committed: it waits for the running turn

		s.printfLocked("       (received %s, queued: a turn is running)\n", stamp(res.ReceivedAt))
	} else {
		s.printfLocked("       (received %s)\n", stamp(res.ReceivedAt))
	}
}

// decide answers an approval: y approves, empty or n denies, any other
// text denies with that reason.
func (s *chatSession) decide(ctx context.Context, a *contract.Approval, ans string) {
	yes := strings.EqualFold(ans, "y") || strings.EqualFold(ans, "yes")
	d := contract.DecideArgs{ID: a.ID, Approve: &yes, By: "starter chat"}
	if !yes && !strings.EqualFold(ans, "n") && !strings.EqualFold(ans, "no") {
		d.Reason = ans
	}
	got, err := s.c.Decide(ctx, s.id, d)
	switch {
	case err != nil:
		s.printf("· decision not recorded: %v\n", err)
	case yes:
		s.printf("       (approved %s at %s)\n", a.ID, stamp(got.Decision.DecidedAt))
	default:
		s.printf("       (denied %s at %s)\n", a.ID, stamp(got.Decision.DecidedAt))
	}
}

func (s *chatSession) cancelTurn(ctx context.Context) {
	if err := s.c.CancelTurn(ctx, s.id); err != nil {
		s.printf("· cancel-turn failed: %v\n", err)
		return
	}
	s.mu.Lock()
	s.streamed = false
	s.printfLocked("· canceling the running turn (Ctrl-C again within 2 s leaves)\n")
	s.mu.Unlock()
}

func (s *chatSession) leave() {
	s.printf("· left the chat; task %s goes on (starter chat %s to come back, starter close %s to end it)\n", s.id, s.id, s.id)
}

// upload streams a file into the task's space of its mount (as starter
// upload does) and keeps the part for the next input.
func (s *chatSession) upload(ctx context.Context, path string) {
	part, err := s.uploadFile(ctx, path)
	if err != nil {
		s.printf("· /files: %v\n", err)
		return
	}
	s.mu.Lock()
	s.attach = append(s.attach, part)
	s.mu.Unlock()
	b, _ := json.Marshal(part)
	s.printf("       (uploaded %s: attached to your next message %s)\n", filepath.Base(path), b)
}

func (s *chatSession) uploadFile(ctx context.Context, path string) (contract.ContentPart, error) {
	var spec contract.MountSpec
	switch {
	case s.x.opt.mount != "":
		spec = contract.MountSpec{Root: "task", Name: s.x.opt.mount}
		if s.agent != nil && s.agent.Mount != nil {
			spec.Root = s.agent.Mount.Root
		}
	case s.agent != nil && s.agent.Mount != nil:
		spec = *s.agent.Mount
	default:
		return contract.ContentPart{}, fmt.Errorf("the agent has no mount to upload to; give chat --mount NAME (a mount of AGENT_MOUNTS)")
	}
	f, err := os.Open(path)
	if err != nil {
		return contract.ContentPart{}, err
	}
	defer f.Close()
	name := filepath.Base(path)
	mt := mime.TypeByExtension(filepath.Ext(name))
	if mt == "" {
		mt = "application/octet-stream"
	}
	mt = strings.SplitN(mt, ";", 2)[0]
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	r, done := s.x.progress("uploaded", name, size, f)
	var part contract.ContentPart
	if spec.Name != "" {
		mounts, perr := mount.ParseMounts(s.x.getenv(mount.EnvMounts))
		if perr != nil {
			return contract.ContentPart{}, perr
		}
		part, err = starter.UploadNamed(ctx, mounts, spec.Root, spec.Name, s.id, name, mt, r)
	} else {
		part, err = starter.Upload(ctx, spec, s.id, name, mt, r)
	}
	done(err)
	return part, err
}

// noOutput is a command's answer that prints nothing more (chat printed
// the conversation itself).
type noOutput struct{}
