package agents

import (
	"time"

	enumspb "go.temporal.io/api/enums/v1"
)

// DefaultAskTimeout bounds Ask: how long a follow-up may take to be answered,
// model retries included.
const DefaultAskTimeout = 10 * time.Minute

// Option tunes Run, Start and Ask.
type Option func(*options)

type options struct {
	taskID           string
	taskQueue        string
	summary          string
	searchAttributes bool
	askTimeout       time.Duration
	parentClose      enumspb.ParentClosePolicy // unspecified: the call's default
}

func optionsOf(opts []Option) options {
	o := options{askTimeout: DefaultAskTimeout}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithTaskID names the child task (its workflow ID). Without it the ID is
// the parent's workflow ID, the agent's name and a suffix recorded in the
// parent's history: "<parent>.<agent>.<suffix>". An ID names one task
// forever: a second start with it fails with TASK_EXISTS.
func WithTaskID(id string) Option { return func(o *options) { o.taskID = id } }

// WithTaskQueue runs the child task (and Ask's activity) on queue; the
// default is the calling workflow's own queue, which the plugin serves when
// it is on the same worker.
func WithTaskQueue(queue string) Option { return func(o *options) { o.taskQueue = queue } }

// WithSummary replaces the one line the Web UI shows for the child
// ("agent <name> · <model> · <mode>", as the starter writes it).
func WithSummary(s string) Option { return func(o *options) { o.summary = s } }

// WithSearchAttributes lists the child under AgentName, AgentModel and
// AgentState, as the starter does. Only for a namespace that has them
// registered (the dev server does): a child started with unknown search
// attributes fails the calling workflow's task until they are.
func WithSearchAttributes() Option { return func(o *options) { o.searchAttributes = true } }

// WithAskTimeout bounds Ask (DefaultAskTimeout otherwise); past it Ask
// fails with ASK_TIMED_OUT and the input stays with the task, which still
// answers it.
func WithAskTimeout(d time.Duration) Option { return func(o *options) { o.askTimeout = d } }

// WithParentClosePolicy says what becomes of the child task when the
// workflow that started it ends: enumspb.PARENT_CLOSE_POLICY_ABANDON (it
// runs on), _TERMINATE (it is terminated) or _REQUEST_CANCEL (it is asked
// to cancel). Start's default is ABANDON: a conversation outlives the
// workflow that opened it, and ends by Close, its idle timeout or its own
// cancel. Run's default is Temporal's, TERMINATE: Run waits for the
// child's end, so the child outlives its parent only when the parent is
// canceled, terminated or timed out, and then goes with it.
func WithParentClosePolicy(p enumspb.ParentClosePolicy) Option {
	return func(o *options) { o.parentClose = p }
}
