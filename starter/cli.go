package starter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"os"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/connect"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/workflows"
)

// EnvTaskQueue names the task queue the workers poll (as the worker reads it).
const EnvTaskQueue = "AGENT_TASK_QUEUE"

// Error types of the command's own failures, beside the runtime's.
const (
	ErrUsage       = "USAGE"       // the command line is wrong (exit status 2)
	ErrUnavailable = "UNAVAILABLE" // Temporal could not be reached
	ErrClient      = "ERROR"       // any other failure that carries no type
)

// Usage is the command's help text.
const Usage = `usage: starter [global flags] COMMAND [arguments] [flags]

Starts agent tasks (Temporal workflows "AgentTask") and talks to them.
Results print to stdout as JSON. Errors print to stderr as
{"error": {"type": ..., "message": ...}}, with exit status 2 for a usage
error and 1 for any other.

commands:
  start --agent JSON|FILE [--input TEXT | --input-json JSON|FILE]
        [--mode conversation|single] [--idle-timeout 30m] [--task-id ID]
  start --args JSON|FILE [--task-id ID]
        start a task; --args is the whole start argument
        {"agent": {...}, "input": {...}, "mode": ..., "idleTimeout": ...}.
        The argument is checked before anything is sent. Prints {"task_id": ...}.
  send TASK_ID TEXT [--signal] [--input-id ID]
  send TASK_ID --json JSON|FILE [--signal] [--input-id ID]
        send an input: TEXT as one text/plain part, or a whole TaskIO such as
        {"message": [{"mimeType": "text/plain", "text": "Hi"}], "param": 1}.
        Waits until the task has queued it and prints {"received_at": ...};
        a refused input is an error. With --signal it is sent as the "input"
        signal: no reply (prints {"signaled": true}), refusals show in status.
        --input-id makes a retry safe: a repeated ID creates no second input
        (the task remembers the last 1,000), and a repeated send prints the
        first receipt. It is the update's ID, or with --signal the input's
        "input_id" key; at most 128 bytes of UTF-8, e.g. a UUID.
  status TASK_ID
  messages TASK_ID [--after N] [--limit M]
        without flags the whole list (refused past 2 MiB); with --after or
        --limit one page (--limit 0: as many as fit 400 KiB)
  messages TASK_ID --all
        the whole list, page by page
  close TASK_ID
        answer what was received, then complete. Prints {"signaled": true}.
  cancel-turn TASK_ID
        stop the running model call. Prints {"signaled": true}.
  approvals TASK_ID
        the task's capability calls that wait for a person's decision, and
        the last decided ones: [{"id": "t3.c1", "capability", "arguments",
        "turn", "requested_at", "decision": null | {...}}, ...]
  approve TASK_ID APPROVAL_ID [--reason TEXT] [--by NAME]
  deny TASK_ID APPROVAL_ID [--reason TEXT] [--by NAME]
        decide a pending approval (the "decide" update): approve runs the
        call, deny tells the model a person refused it, with the reason.
        --by names who decided. Prints the approval with its decision; an
        unknown ID is APPROVAL_NOT_FOUND, a decided one APPROVAL_DECIDED.
        Repeating the same decision is safe: it prints the first answer.
  result TASK_ID
        wait for the task to end; prints its result, or its error
  rescue TASK_ID [--input TEXT] [--task-id NEW_ID] [--var NAME=JSON]...
        start a new task that redoes a failed, canceled, terminated or timed-out
        one, with everything it collected. Prints {"task_id": ...}.
  resume TASK_ID TEXT [--task-id NEW_ID] [--var NAME=JSON]...
        start a new task that continues a completed one with a new input,
        with everything it collected. Prints {"task_id": ...}.
  upload TASK_ID FILE --mount NAME|--mount-url URL [--root task] [--as PATH] [--mime TYPE]
        stream FILE into the task's space of the agent's mount (before or
        after the task starts) and print the content part to send, e.g.
        {"mimeType": "image/png", "file": "task://cat.png", "sizeBytes": 5120}
  help

JSON|FILE is inline JSON (starting with "{"), a file name, or "-" for stdin.
TEXT "-" reads the text from stdin; put "--" before a TEXT starting with "-".

global flags (anywhere on the line):
  --address HOST:PORT  Temporal frontend (TEMPORAL_ADDRESS; default localhost:7233)
  --namespace NAME     Temporal namespace (TEMPORAL_NAMESPACE; default "default")
  --task-queue NAME    the workers' task queue (AGENT_TASK_QUEUE; default "agent-tasks")
TLS and API keys come from TEMPORAL_API_KEY, TEMPORAL_TLS and TEMPORAL_TLS_*,
as for the temporal CLI.
`

// Main runs the starter command; cmd/starter calls it with the process's
// arguments (without the program name) and exits with its result.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	dial := func(o client.Options) (client.Client, error) { return client.DialContext(ctx, o) }
	return mainWith(ctx, args, os.Stdin, stdout, stderr, getenv, dial)
}

// cli is one run of the command.
type cli struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	getenv func(string) string
	dial   func(client.Options) (client.Client, error)

	address, namespace, taskQueue string

	tc client.Client
	dc converter.DataConverter
}

type usageError struct {
	msg       string
	showUsage bool // the command itself is missing or unknown
}

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

var errHelp = errors.New("help")

// commands maps each command to the function that declares its flags and
// returns what runs with the positional arguments once they are parsed.
var commands = map[string]func(fs *flag.FlagSet) func(x *cli, pos []string) (any, error){
	"start":       startFlags,
	"send":        sendFlags,
	"status":      statusFlags,
	"messages":    messagesFlags,
	"close":       signalFlags(func(x *cli, c *Client, id string) error { return c.Close(x.ctx, id) }),
	"cancel-turn": signalFlags(func(x *cli, c *Client, id string) error { return c.CancelTurn(x.ctx, id) }),
	"result":      resultFlags,
	"approvals":   approvalsFlags,
	"approve":     decideFlags(true),
	"deny":        decideFlags(false),
	"upload":      uploadFlags,
	"rescue":      againFlags(false),
	"resume":      againFlags(true),
}

func mainWith(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string, dial func(client.Options) (client.Client, error)) int {
	x := &cli{ctx: ctx, stdin: stdin, stdout: stdout, getenv: getenv, dial: dial}
	defer func() {
		if x.tc != nil {
			x.tc.Close()
		}
	}()

	out, err := x.dispatch(args)
	var ue *usageError
	switch {
	case errors.Is(err, errHelp) && len(args) == 0:
		fmt.Fprint(stderr, Usage) // no command at all: a usage error
		return 2
	case errors.Is(err, errHelp):
		fmt.Fprint(stdout, Usage) // asked for: success
		return 0
	case errors.As(err, &ue):
		writeError(stderr, ErrUsage, ue.msg)
		if ue.showUsage {
			fmt.Fprint(stderr, "\n"+Usage)
		}
		return 2
	case err != nil:
		typ, msg := ErrClient, err.Error()
		var se *contract.Error
		if errors.As(err, &se) {
			typ, msg = se.Type, se.Message
		}
		writeError(stderr, typ, msg)
		return 1
	}
	if err := writeJSON(stdout, out); err != nil {
		writeError(stderr, ErrClient, "writing the output: "+err.Error())
		return 1
	}
	return 0
}

func (x *cli) dispatch(args []string) (any, error) {
	globals := newFlagSet("starter")
	x.globalFlags(globals)
	// Flags before the command may only be global ones.
	i := 0
	for i < len(args) && isFlag(args[i]) {
		if args[i] == "--" {
			i++
			break
		}
		name, hasValue := flagName(args[i])
		if name == "h" || name == "help" {
			return nil, errHelp
		}
		f := globals.Lookup(name)
		if f == nil {
			return nil, usagef("unknown flag %s (before the command only --address, --namespace and --task-queue may come)", args[i])
		}
		i++
		if !hasValue && !isBoolFlag(f) {
			i++
		}
	}
	if i >= len(args) {
		return nil, errHelp
	}
	name := args[i]
	if name == "help" {
		return nil, errHelp
	}
	declare, ok := commands[name]
	if !ok {
		return nil, &usageError{msg: fmt.Sprintf("unknown command %q", name), showUsage: true}
	}
	rest := append(append([]string(nil), args[:i]...), args[i+1:]...)
	fs := newFlagSet(name)
	x.globalFlags(fs)
	run := declare(fs)
	pos, err := parseFlags(fs, rest)
	if err != nil {
		return nil, err
	}
	return run(x, pos)
}

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

func (x *cli) globalFlags(fs *flag.FlagSet) {
	fs.StringVar(&x.address, "address", x.address, "Temporal frontend host:port")
	fs.StringVar(&x.namespace, "namespace", x.namespace, "Temporal namespace")
	fs.StringVar(&x.taskQueue, "task-queue", x.taskQueue, "the workers' task queue")
}

func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' }

func flagName(a string) (name string, hasValue bool) {
	name = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	name, _, hasValue = strings.Cut(name, "=")
	return name, hasValue
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// parseFlags parses flags anywhere among the arguments (the flag package
// stops at the first positional one) and returns the positional ones. "--"
// ends the flags.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !isFlag(a) {
			pos = append(pos, a)
			continue
		}
		name, hasValue := flagName(a)
		if name == "h" || name == "help" {
			return nil, errHelp
		}
		f := fs.Lookup(name)
		if f == nil {
			return nil, usagef("%s: unknown flag %s", fs.Name(), a)
		}
		flags = append(flags, a)
		if !hasValue && !isBoolFlag(f) {
			if i+1 >= len(args) {
				return nil, usagef("%s: flag %s needs a value", fs.Name(), a)
			}
			i++
			flags = append(flags, args[i])
		}
	}
	if err := fs.Parse(flags); err != nil {
		return nil, usagef("%s: %v", fs.Name(), err)
	}
	return pos, nil
}

// setFlags names the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	m := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { m[f.Name] = true })
	return m
}

// client dials Temporal once, with the flags over the environment.
func (x *cli) client() (*Client, error) {
	if x.tc == nil {
		env := func(k string) string {
			switch {
			case k == connect.EnvAddress && x.address != "":
				return x.address
			case k == connect.EnvNamespace && x.namespace != "":
				return x.namespace
			}
			return x.getenv(k)
		}
		opts, err := connect.Options(env, quietLogger())
		if err != nil {
			return nil, fmt.Errorf("Temporal connection settings: %w", err)
		}
		tc, err := x.dial(opts)
		if err != nil {
			return nil, &contract.Error{Type: ErrUnavailable, Message: fmt.Sprintf("connecting to Temporal at %s (namespace %q): %v", opts.HostPort, opts.Namespace, err)}
		}
		x.tc = tc
		x.dc = opts.DataConverter // encrypted payloads (AGENT_CODEC_KEYS)
	}
	q := x.taskQueue
	if q == "" {
		q = x.getenv(EnvTaskQueue)
	}
	c := New(x.tc, q).WithDataConverter(x.dc)
	if v := x.getenv(mount.EnvMounts); v != "" {
		mounts, err := mount.ParseMounts(v)
		if err != nil {
			return nil, usagef("%v", err)
		}
		c.CheckMounts(mounts) // the workers' list: a start naming other storage is refused here
	}
	return c, nil
}

// quietLogger keeps the SDK from writing to stdout, which carries the JSON.
func quietLogger() log.Logger {
	return log.NewStructuredLogger(slog.New(slog.DiscardHandler))
}

func oneTaskID(cmd string, pos []string) (string, error) {
	if len(pos) == 0 {
		return "", usagef("%s: TASK_ID is missing", cmd)
	}
	if len(pos) > 1 {
		return "", usagef("%s: unexpected arguments after the task ID: %q", cmd, pos[1:])
	}
	return pos[0], nil
}

// --- start ---

func startFlags(fs *flag.FlagSet) func(x *cli, pos []string) (any, error) {
	agent := fs.String("agent", "", "the agent: inline JSON, a file, or - for stdin")
	input := fs.String("input", "", "the first input, as text")
	inputJSON := fs.String("input-json", "", "the first input, a TaskIO: inline JSON, a file, or -")
	mode := fs.String("mode", "", "conversation or single")
	taskID := fs.String("task-id", "", "the task ID; generated when left out")
	idle := fs.String("idle-timeout", "", "end a conversation idle this long, e.g. 30m")
	argsFile := fs.String("args", "", "the whole start argument: inline JSON, a file, or -")
	return func(x *cli, pos []string) (any, error) {
		if len(pos) > 0 {
			return nil, usagef("start: unexpected arguments %q (the first input goes in --input or --input-json)", pos)
		}
		set := setFlags(fs)
		var args workflows.StartArgs
		if set["args"] {
			for _, f := range []string{"agent", "input", "input-json", "mode", "idle-timeout"} {
				if set[f] {
					return nil, usagef("start: --args holds the whole start argument; put %s in it instead of --%s", f, f)
				}
			}
			data, err := x.readJSON("--args", *argsFile)
			if err != nil {
				return nil, err
			}
			a, _, err := workflows.CheckStartJSON(data)
			if err != nil {
				return nil, err
			}
			args = *a
		} else {
			if !set["agent"] {
				return nil, usagef("start: --agent is required (or --args with the whole start argument)")
			}
			if set["input"] && set["input-json"] {
				return nil, usagef("start: give --input or --input-json, not both")
			}
			data, err := x.readJSON("--agent", *agent)
			if err != nil {
				return nil, err
			}
			if err := decodeStrict(data, &args.Agent); err != nil {
				return nil, contract.Invalid("--agent: not an agent object such as {\"name\": \"helper\", \"model\": \"openai/gpt-4o-mini\"}: %v", err)
			}
			switch {
			case set["input"]:
				in := textInput(*input)
				args.Input = &in
			case set["input-json"]:
				in, err := x.readTaskIO("--input-json", *inputJSON)
				if err != nil {
					return nil, err
				}
				args.Input = &in
			}
			args.Mode = workflows.Mode(*mode)
			args.IdleTimeout = *idle
		}
		// Refuse a bad argument before dialing: no server is needed to learn it.
		if _, err := workflows.CheckStart(&args); err != nil {
			return nil, err
		}
		if set["task-id"] {
			if err := CheckTaskID(*taskID); err != nil {
				return nil, err
			}
		}
		c, err := x.client()
		if err != nil {
			return nil, err
		}
		id, err := c.Start(x.ctx, args, StartOptions{TaskID: *taskID})
		if err != nil {
			return nil, err
		}
		return map[string]string{"task_id": id}, nil
	}
}

// readJSON reads a flag's JSON: inline when it starts with "{" (or "["),
// stdin for "-", and otherwise the file it names.
func (x *cli) readJSON(flagName, v string) ([]byte, error) {
	t := strings.TrimSpace(v)
	switch {
	case t == "":
		return nil, contract.Invalid("%s: empty; give inline JSON, a file name, or - for stdin", flagName)
	case t[0] == '{' || t[0] == '[':
		return []byte(t), nil
	case t == "-":
		b, err := io.ReadAll(x.stdin)
		if err != nil {
			return nil, fmt.Errorf("%s: reading stdin: %w", flagName, err)
		}
		return b, nil
	}
	b, err := os.ReadFile(v)
	if errors.Is(err, os.ErrNotExist) {
		return nil, contract.Invalid("%s: %q is neither inline JSON (which starts with \"{\") nor an existing file", flagName, v)
	}
	if err != nil {
		return nil, contract.Invalid("%s: %v", flagName, err)
	}
	return b, nil
}

func (x *cli) readTaskIO(flagName, v string) (contract.TaskIO, error) {
	var in contract.TaskIO
	data, err := x.readJSON(flagName, v)
	if err != nil {
		return in, err
	}
	if err := decodeStrict(data, &in); err != nil {
		return in, contract.Invalid("%s: not a TaskIO such as {\"message\": [{\"mimeType\": \"text/plain\", \"text\": \"Hello\"}]}: %v", flagName, err)
	}
	return in, nil
}

// decodeStrict decodes one JSON value, refusing unknown fields and trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

func textInput(s string) contract.TaskIO {
	return contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(s)}}
}

// --- send ---

func sendFlags(fs *flag.FlagSet) func(x *cli, pos []string) (any, error) {
	asJSON := fs.String("json", "", "the input, a TaskIO: inline JSON, a file, or -")
	signal := fs.Bool("signal", false, "send the input signal instead of the send update")
	inputID := fs.String("input-id", "", "the input's idempotency key: the update ID, or input_id in the signal")
	return func(x *cli, pos []string) (any, error) {
		set := setFlags(fs)
		if len(pos) == 0 {
			return nil, usagef("send: TASK_ID is missing")
		}
		id := pos[0]
		var in contract.TaskIO
		switch {
		case set["json"] && len(pos) > 1:
			return nil, usagef("send: give TEXT or --json, not both")
		case set["json"]:
			var err error
			if in, err = x.readTaskIO("--json", *asJSON); err != nil {
				return nil, err
			}
		case len(pos) == 1:
			return nil, usagef("send: TEXT (or --json) is missing")
		case len(pos) > 2:
			return nil, usagef("send: TEXT must be one argument; quote it")
		case pos[1] == "-":
			b, err := io.ReadAll(x.stdin)
			if err != nil {
				return nil, fmt.Errorf("send: reading stdin: %w", err)
			}
			in = textInput(string(b))
		default:
			in = textInput(pos[1])
		}
		// Refuse a bad input ID before dialing: no server is needed to learn it.
		if set["input-id"] {
			if err := CheckInputID(*inputID); err != nil {
				return nil, err
			}
			if err := checkInputIDAgrees(in, *inputID); err != nil {
				return nil, err
			}
		}
		c, err := x.client()
		if err != nil {
			return nil, err
		}
		if *signal {
			if err := c.SignalWithID(x.ctx, id, *inputID, in); err != nil {
				return nil, err
			}
			return map[string]bool{"signaled": true}, nil
		}
		return c.SendWithID(x.ctx, id, *inputID, in)
	}
}

// --- queries, signals, result ---

func statusFlags(fs *flag.FlagSet) func(x *cli, pos []string) (any, error) {
	return func(x *cli, pos []string) (any, error) {
		id, err := oneTaskID("status", pos)
		if err != nil {
			return nil, err
		}
		c, err := x.client()
		if err != nil {
			return nil, err
		}
		return c.Status(x.ctx, id)
	}
}

func messagesFlags(fs *flag.FlagSet) func(x *cli, pos []string) (any, error) {
	after := fs.Int("after", 0, "entries after this many")
	limit := fs.Int("limit", 0, "at most this many entries; 0: as many as fit a page")
	all := fs.Bool("all", false, "the whole list, page by page")
	return func(x *cli, pos []string) (any, error) {
		id, err := oneTaskID("messages", pos)
		if err != nil {
			return nil, err
		}
		set := setFlags(fs)
		paged := set["after"] || set["limit"]
		if *all && paged {
			return nil, usagef("messages: --all reads every page; leave out --after and --limit")
		}
		if *after < 0 || *limit < 0 {
			return nil, usagef("messages: --after and --limit must not be negative")
		}
		c, err := x.client()
		if err != nil {
			return nil, err
		}
		switch {
		case *all:
			return c.AllMessages(x.ctx, id)
		case paged:
			return c.Messages(x.ctx, id, &workflows.MessagesPage{After: *after, Limit: *limit})
		default:
			return c.Messages(x.ctx, id, nil)
		}
	}
}

func signalFlags(send func(x *cli, c *Client, id string) error) func(fs *flag.FlagSet) func(x *cli, pos []string) (any, error) {
	return func(fs *flag.FlagSet) func(x *cli, pos []string) (any, error) {
		return func(x *cli, pos []string) (any, error) {
			id, err := oneTaskID(fs.Name(), pos)
			if err != nil {
				return nil, err
			}
			c, err := x.client()
			if err != nil {
				return nil, err
			}
			if err := send(x, c, id); err != nil {
				return nil, err
			}
			return map[string]bool{"signaled": true}, nil
		}
	}
}

func resultFlags(fs *flag.FlagSet) func(x *cli, pos []string) (any, error) {
	return func(x *cli, pos []string) (any, error) {
		id, err := oneTaskID("result", pos)
		if err != nil {
			return nil, err
		}
		c, err := x.client()
		if err != nil {
			return nil, err
		}
		return c.Result(x.ctx, id)
	}
}

// --- approvals ---

func approvalsFlags(fs *flag.FlagSet) func(x *cli, pos []string) (any, error) {
	return func(x *cli, pos []string) (any, error) {
		id, err := oneTaskID("approvals", pos)
		if err != nil {
			return nil, err
		}
		c, err := x.client()
		if err != nil {
			return nil, err
		}
		return c.Approvals(x.ctx, id)
	}
}

// decideFlags: approve|deny TASK_ID APPROVAL_ID [--reason TEXT] [--by NAME].
func decideFlags(approve bool) func(fs *flag.FlagSet) func(x *cli, pos []string) (any, error) {
	return func(fs *flag.FlagSet) func(x *cli, pos []string) (any, error) {
		reason := fs.String("reason", "", "why (shown to the model when denied)")
		by := fs.String("by", "", "who decided, such as a user ID")
		return func(x *cli, pos []string) (any, error) {
			cmd := fs.Name()
			switch len(pos) {
			case 0:
				return nil, usagef("%s: TASK_ID is missing", cmd)
			case 1:
				return nil, usagef("%s: APPROVAL_ID is missing (the approvals command lists them)", cmd)
			case 2:
			default:
				return nil, usagef("%s: unexpected arguments after the approval ID: %q (quote a --reason of several words)", cmd, pos[2:])
			}
			d := workflows.DecideArgs{ID: pos[1], Approve: &approve, Reason: *reason, By: *by}
			// Refuse a bad argument before dialing: no server is needed to learn it.
			if err := CheckDecide(d); err != nil {
				return nil, err
			}
			c, err := x.client()
			if err != nil {
				return nil, err
			}
			return c.Decide(x.ctx, pos[0], d)
		}
	}
}

// --- output ---

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeError writes {"error": {"type": ..., "message": ...}} on one line.
func writeError(w io.Writer, typ, msg string) {
	var e struct {
		Error contract.Error `json:"error"`
	}
	e.Error = contract.Error{Type: typ, Message: msg}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(e)
}

// uploadFlags: upload TASK_ID FILE --mount NAME|--mount-url URL [--root task] [--as PATH] [--mime TYPE]
// streams a file into the task's space of the agent's mount and prints the
// ContentPart to send. No Temporal connection is needed.
func uploadFlags(fs *flag.FlagSet) func(x *cli, pos []string) (any, error) {
	mountName := fs.String("mount", "", "the agent's mount, by its name in AGENT_MOUNTS (the workers' list)")
	mountURL := fs.String("mount-url", "", "the agent's mount URL (file:///..., s3://..., gs://...), when AGENT_MOUNTS is not at hand")
	root := fs.String("root", "task", "the agent's mount root: references read <root>://<path>")
	as := fs.String("as", "", "path in the task's space; default the file's name")
	mimeType := fs.String("mime", "", "media type; default guessed from the extension")
	return func(x *cli, pos []string) (any, error) {
		if len(pos) != 2 {
			return nil, usagef("upload takes TASK_ID FILE")
		}
		if (*mountName == "") == (*mountURL == "") {
			return nil, usagef("upload needs --mount NAME (a mount of AGENT_MOUNTS) or --mount-url URL")
		}
		var mounts mount.Mounts
		if *mountName != "" {
			var err error
			if mounts, err = mount.ParseMounts(x.getenv(mount.EnvMounts)); err != nil {
				return nil, usagef("%v", err)
			}
		}
		f, err := os.Open(pos[1])
		if err != nil {
			return nil, err
		}
		defer f.Close()
		path := *as
		if path == "" {
			path = filepath.Base(pos[1])
		}
		mt := *mimeType
		if mt == "" {
			if mt = mime.TypeByExtension(filepath.Ext(path)); mt == "" {
				mt = "application/octet-stream"
			}
			mt = strings.SplitN(mt, ";", 2)[0]
		}
		if *mountName != "" {
			return UploadNamed(x.ctx, mounts, *root, *mountName, pos[0], path, mt, f)
		}
		return Upload(x.ctx, contract.MountSpec{Root: *root, URL: *mountURL}, pos[0], path, mt, f)
	}
}

// againFlags: rescue OLD_ID [--input TEXT] / resume OLD_ID TEXT, [--task-id NEW].
func againFlags(resume bool) func(fs *flag.FlagSet) func(x *cli, pos []string) (any, error) {
	return func(fs *flag.FlagSet) func(x *cli, pos []string) (any, error) {
		newID := fs.String("task-id", "", "the new task's ID; default a generated one")
		inputText := fs.String("input", "", "rescue: a text input replacing the original one")
		vars := map[string]json.RawMessage{}
		fs.Func("var", "NAME=JSON: a variable replacing the earlier task's (repeatable); secrets of a task whose first run's history is gone", func(v string) error {
			name, value, ok := strings.Cut(v, "=")
			if !ok || name == "" || !json.Valid([]byte(value)) {
				return fmt.Errorf("--var takes NAME=JSON, such as api_key=\"abc\" (got %q)", v)
			}
			vars[name] = json.RawMessage(value)
			return nil
		})
		return func(x *cli, pos []string) (any, error) {
			c, err := x.client()
			if err != nil {
				return nil, err
			}
			o := StartOptions{TaskID: *newID, Variables: vars}
			var id string
			if resume {
				if len(pos) != 2 {
					return nil, usagef("resume takes TASK_ID TEXT")
				}
				id, err = c.Resume(x.ctx, pos[0], contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(pos[1])}}, o)
			} else {
				if len(pos) != 1 {
					return nil, usagef("rescue takes TASK_ID")
				}
				var in *contract.TaskIO
				if *inputText != "" {
					in = &contract.TaskIO{Message: []contract.ContentPart{contract.TextPart(*inputText)}}
				}
				id, err = c.Rescue(x.ctx, pos[0], in, o)
			}
			if err != nil {
				return nil, err
			}
			return map[string]string{"task_id": id}, nil
		}
	}
}
