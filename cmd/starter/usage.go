package main

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
        [--budget-units N] [--budget-input-tokens N] [--budget-output-tokens N]
        [--on-exhausted wait|fail]
  start --args JSON|FILE [--task-id ID]
        start a task; --args is the whole start argument
        {"agent": {...}, "input": {...}, "mode": ..., "idleTimeout": ...,
        "budget": {"units": N, "onExhausted": "wait"}}.
        The --budget-* flags bound what the task and its sub-tasks spend on
        model calls (docs/budgets.md): a call whose worst case does not fit
        what is left waits in awaiting_budget for raise-budget, or with
        --on-exhausted fail ends the task with BUDGET_EXCEEDED.
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
        the whole list, page by page. With AGENT_TRANSCRIPT_URL (the workers'
        store, and their AGENT_CODEC_KEYS) a task Temporal no longer has is
        read from its transcript, until the retention sweep removes it.
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
  raise-budget TASK_ID [--units N] [--input-tokens N] [--output-tokens N] [--by NAME]
        add to the task's budget (the "raise-budget" update; each amount
        positive, in a dimension the budget limits): a task in awaiting_budget
        goes on once what is left covers its next call. Prints the budget
        {"limit", "used", "reserved", "left", "raises"}. A raise adds: a
        repeated raise-budget raises again.
  result TASK_ID
        wait for the task to end; prints its result, or its error (a
        BUDGET_EXCEEDED error also prints "details": its records, usage, budget)
  rescue TASK_ID [--input TEXT] [--task-id NEW_ID] [--var NAME=JSON]... [--budget-* N]
        start a new task that redoes a failed, canceled, terminated or timed-out
        one, with everything it collected. Prints {"task_id": ...}.
  resume TASK_ID TEXT [--task-id NEW_ID] [--var NAME=JSON]... [--budget-* N]
        start a new task that continues a completed one with a new input,
        with everything it collected. Prints {"task_id": ...}. Either hands
        the new task what is left of the earlier one's budget, unless the
        --budget-* flags (and --on-exhausted) give it a new one.
  upload TASK_ID FILE --mount NAME|--mount-url URL [--root task] [--as PATH] [--mime TYPE]
        stream FILE into the task's space of the agent's mount (before or
        after the task starts) and print the content part to send, e.g.
        {"mimeType": "image/png", "file": "task://cat.png", "sizeBytes": 5120}.
        On a terminal a file over 4 MiB shows a progress bar on stderr;
        off one, stderr gets "uploaded NAME: N bytes in T".
  chat --agent JSON|FILE [--input TEXT] [--task-id ID] [--idle-timeout D] [--mount NAME]
  chat TASK_ID [--mount NAME]
        talk to a new conversation (--agent) or a running task in the
        terminal: each line is sent as an input; the answer prints as it is
        written when the task streams (an agent without capabilities,
        exposes or mount, with AGENT_NATS_URL set), else whole once
        committed; an input sent during a turn shows "queued", then its
        read receipt "committed <instant>"; a pending approval asks
        "approve? [y/N/reason]" (y approves, Enter or n denies, other text
        denies with it as the reason). Ctrl-C cancels the running turn;
        Ctrl-C twice within 2 s, Ctrl-D or /quit leaves (the task goes on:
        close TASK_ID ends it). /files PATH uploads a file to the agent's
        mount (or --mount) and attaches it to the next message.
  delete TASK_ID
        remove the task and everything it owns, its sub-tasks too: executions,
        transcript, stashed state, files, streamed events. Prints what went;
        a task with nothing left (deleted before) is TASK_NOT_FOUND.
  deploy describe|current BUILD_ID|ramp BUILD_ID PERCENT|ramp-stop|delete BUILD_ID
        the workers' Worker Deployment (AGENT_DEPLOYMENT_NAME): list its
        versions, make one current (roll out or back), ramp one, delete a
        drained one (docs/deploy.md)
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
