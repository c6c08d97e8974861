package contract

import (
	"bytes"
	"encoding/json"
	"time"
)

// Capability kinds.
const (
	// CapabilityDelegate starts Agent as a sub-task with the model's input
	// (files copied into its mount) and returns its answer (files copied back).
	CapabilityDelegate = "delegate"
	// CapabilityActivity runs the activity type Activity on TaskQueue with the
	// model's arguments (checked against Parameters) as its one JSON argument;
	// its JSON result is the tool result.
	CapabilityActivity = "activity"
	// CapabilityMCP offers the tools of the MCP server Server (one the
	// worker's operator lists in AGENT_MCP_SERVERS), all of them or those
	// Tools names, each as a function "<capability>__<tool>" (docs/mcp.md).
	CapabilityMCP = "mcp"
	// CapabilityClient is a tool the caller's front end runs (an AG-UI
	// client's frontend tool): its call waits, as an approval does, for
	// the client's result (capability_client.go).
	CapabilityClient = "client"
	// CapabilityA2A is a remote agent (A2A v1.0) the worker's operator
	// lists in AGENT_A2A_AGENTS, named by RemoteAgent: the model sends it
	// a message and reads its answer; a long remote task is followed by
	// polls between timers, and what it asks the user waits for a person
	// as an approval does (capability_a2a.go, docs/a2a.md).
	CapabilityA2A = "a2a"
)

// Approval policies of a capability (Capability.Approval).
const (
	ApprovalNever  = "never"  // the default: only ApprovalCondition can ask
	ApprovalAlways = "always" // every call waits for a person's decision
)

// Defaults and bounds of an activity capability.
const (
	MaxMCPServerChars          = 64
	MaxMCPToolChars            = 128
	MaxMCPTools                = 128 // names in an mcp capability's "tools"
	DefaultCapabilityTimeout   = 30 * time.Second
	DefaultCapabilityStart     = time.Minute      // startTimeout: a worker must pick the call up by then
	DefaultCapabilityCall      = 10 * time.Minute // timeout: the whole call, retries included
	MinCapabilityTimeout       = time.Second
	MaxCapabilityTimeout       = 24 * time.Hour
	MinApprovalTimeout         = time.Second
	MaxActivityNameChars       = 200
	MaxTaskQueueChars          = 200
	MaxCapabilityParamsBytes   = 16_000
	DefaultRetryInitial        = time.Second
	DefaultRetryBackoff        = 2.0
	DefaultRetryMaxInterval    = time.Minute
	DefaultRetryMaxAttempts    = 5
	MinRetryInterval           = 10 * time.Millisecond
	MaxRetryInitialInterval    = time.Hour
	MaxRetryMaxInterval        = 24 * time.Hour
	MaxRetryBackoffCoefficient = 100.0
	MaxRetryAttempts           = 100
)

// Capability is a tool the model can call.
type Capability struct {
	Name        string     `json:"name"`
	Kind        string     `json:"kind"`
	Description string     `json:"description,omitempty"`
	Condition   string     `json:"condition,omitempty"` // CEL; offered only when it holds
	Agent       *AgentSpec `json:"agent,omitempty"`     // delegate: the agent the sub-task runs

	// Server names the MCP server an mcp capability uses: a name the
	// worker's operator configured (AGENT_MCP_SERVERS), never a URL.
	Server string `json:"server,omitempty"`
	// Tools, for an mcp capability, names the server's tools the model
	// may call; absent: all of them.
	Tools []string `json:"tools,omitempty"`
	// AutoApprove, for an mcp capability, names the server's tools that
	// run without a person's approval although the server marks them (or,
	// giving no annotations, leaves them) destructive or open-world; "*"
	// names every tool (docs/mcp.md).
	AutoApprove []string `json:"autoApprove,omitempty"`

	// RemoteAgent names the remote agent an a2a capability calls: a name
	// the worker's operator configured (AGENT_A2A_AGENTS), never a URL.
	RemoteAgent string `json:"remoteAgent,omitempty"`

	// Activity is the activity type an activity capability runs (1 to 200
	// characters), registered by a worker of the caller's on TaskQueue.
	Activity string `json:"activity,omitempty"`
	// TaskQueue is where that activity runs; empty: the task's own queue.
	TaskQueue string `json:"taskQueue,omitempty"`
	// Parameters is the argument schema (the schema subset, an object at the
	// top) the model's arguments must fit; absent: {"type": "object"}.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// StartToCloseTimeout bounds one attempt (Go duration, 1s to 24h); empty: 30s.
	StartToCloseTimeout string `json:"startToCloseTimeout,omitempty"`
	// StartTimeout bounds how long a call waits for a worker on TaskQueue
	// to pick it up (Go duration, 1s to 24h); empty: 1m. A queue nobody
	// polls (a typo) ends the call then, and the model reads why.
	StartTimeout string `json:"startTimeout,omitempty"`
	// CallTimeout bounds the whole call, every attempt and wait included
	// (Go duration, 1s to 24h); empty: 10m.
	CallTimeout string `json:"timeout,omitempty"`
	// Retry overrides the default retry policy key by key; nil: the default
	// (see CapabilityRetry).
	Retry *CapabilityRetry `json:"retry,omitempty"`

	// Approval is "never" (empty means never) or "always": whether every
	// call waits for a person's decision before it runs. Any kind.
	Approval string `json:"approval,omitempty"`
	// ApprovalCondition is CEL over args, variables and collected: a call
	// for which it is true (or fails to evaluate) waits for a decision.
	ApprovalCondition string `json:"approvalCondition,omitempty"`
	// ApprovalTimeout (Go duration, at least 1s) denies a pending approval
	// with reason "approval timed out"; empty: it waits without limit.
	ApprovalTimeout string `json:"approvalTimeout,omitempty"`

	// Budget, for a delegate capability, is the share of this task's budget
	// one sub-task it starts may spend (budget.go): held
	// for it while it runs, what it used counted against this task when it
	// ends. Absent: a sub-task may spend what this task has left.
	Budget *Amounts `json:"budget,omitempty"`
}

// CapabilityRetry is an activity capability's retry policy; each key left
// out keeps its default: initialInterval 1s, backoffCoefficient 2,
// maximumInterval 1m (or initialInterval when that is longer),
// maximumAttempts 5 (the first attempt included). Non-retryable application
// errors are never retried.
type CapabilityRetry struct {
	InitialInterval    string  `json:"initialInterval,omitempty"`    // Go duration, 10ms to 1h
	BackoffCoefficient float64 `json:"backoffCoefficient,omitempty"` // 1 to 100
	MaximumInterval    string  `json:"maximumInterval,omitempty"`    // Go duration, initialInterval to 24h
	MaximumAttempts    int     `json:"maximumAttempts,omitempty"`    // 1 to 100
}

// RetryPolicy is an effective retry policy in plain values, for the
// workflow to turn into a temporal.RetryPolicy.
type RetryPolicy struct {
	InitialInterval    time.Duration
	BackoffCoefficient float64
	MaximumInterval    time.Duration
	MaximumAttempts    int
}

// Policy is the effective policy: r's keys over the defaults. A nil r (no
// "retry" key) gives the defaults. Values are assumed checked
// (CheckAgent); one that does not parse keeps its default.
func (r *CapabilityRetry) Policy() RetryPolicy {
	p := RetryPolicy{
		InitialInterval:    DefaultRetryInitial,
		BackoffCoefficient: DefaultRetryBackoff,
		MaximumInterval:    DefaultRetryMaxInterval,
		MaximumAttempts:    DefaultRetryMaxAttempts,
	}
	if r == nil {
		return p
	}
	if d, err := time.ParseDuration(r.InitialInterval); err == nil && d > 0 {
		p.InitialInterval = d
	}
	if r.BackoffCoefficient >= 1 {
		p.BackoffCoefficient = r.BackoffCoefficient
	}
	if d, err := time.ParseDuration(r.MaximumInterval); err == nil && d > 0 {
		p.MaximumInterval = d
	} else if p.InitialInterval > p.MaximumInterval {
		p.MaximumInterval = p.InitialInterval
	}
	if r.MaximumAttempts > 0 {
		p.MaximumAttempts = r.MaximumAttempts
	}
	return p
}

// RetryPolicy is the capability's effective retry policy (activity kind).
func (c Capability) RetryPolicy() RetryPolicy { return c.Retry.Policy() }

// Timeout is an activity capability's start-to-close timeout: its
// startToCloseTimeout, or 30s when empty (or, unchecked, invalid).
func (c Capability) Timeout() time.Duration {
	if d, err := time.ParseDuration(c.StartToCloseTimeout); err == nil && d > 0 {
		return d
	}
	return DefaultCapabilityTimeout
}

// StartWait is an activity capability's schedule-to-start bound.
func (c Capability) StartWait() time.Duration {
	if d, err := time.ParseDuration(c.StartTimeout); err == nil && d > 0 {
		return d
	}
	return DefaultCapabilityStart
}

// CallWait is an activity capability's schedule-to-close bound: the whole
// call, never shorter than one attempt's bound.
func (c Capability) CallWait() time.Duration {
	d, err := time.ParseDuration(c.CallTimeout)
	if err != nil || d <= 0 {
		d = DefaultCapabilityCall
	}
	return max(d, c.Timeout())
}

// ApprovalWait is how long a pending approval waits before it is denied
// with "approval timed out"; 0: without limit.
func (c Capability) ApprovalWait() time.Duration {
	if d, err := time.ParseDuration(c.ApprovalTimeout); err == nil && d > 0 {
		return d
	}
	return 0
}

// NeedsApprovalAlways reports whether every call waits for a decision
// ("approval": "always"). A call may also need one by its
// approvalCondition (guard.ApprovalNeeded).
func (c Capability) NeedsApprovalAlways() bool { return c.Approval == ApprovalAlways }

// MayNeedApproval reports whether any call may wait for a decision: approval
// is "always" or an approvalCondition is set; every client capability's
// call waits for its client, and a remote agent (a2a) may ask the user.
func (c Capability) MayNeedApproval() bool {
	return c.NeedsApprovalAlways() || c.ApprovalCondition != "" || c.Kind == CapabilityClient || c.Kind == CapabilityA2A
}

// HasParameters reports whether the model's arguments are checked against
// the capability's parameters: an activity or a client capability.
func (c Capability) HasParameters() bool {
	return c.Kind == CapabilityActivity || c.Kind == CapabilityClient
}

// ToolParameters is the argument schema an activity capability offers the
// model: its parameters, or {"type": "object"} when it declares none.
func (c Capability) ToolParameters() json.RawMessage {
	if hasJSON(c.Parameters) {
		return c.Parameters
	}
	return json.RawMessage(defaultCapabilityParams)
}

const defaultCapabilityParams = `{"type":"object"}`

func hasJSON(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// CheckCapabilityArgs checks a call's arguments (JSON text) against the
// activity capability name's parameters. It returns the violations by path,
// sorted (nil: the arguments fit), for the model to correct; empty
// arguments count as {}. A capability without compiled parameters (not an
// activity capability) accepts any object.
func (a *Agent) CheckCapabilityArgs(name string, args json.RawMessage) []Violation {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return []Violation{{Path: "/", Message: "the arguments must be one JSON object"}}
	}
	c := a.CapabilityParams[name]
	if c == nil {
		return nil
	}
	return c.Validate(obj)
}
