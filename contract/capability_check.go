package contract

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

var capabilityNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// checkCapabilityShapes checks what schema alone can: names, kinds, nesting.
// Mount URLs and CEL expressions are checked by their packages.
func checkCapabilityShapes(path string, s AgentSpec) error {
	if s.Mount != nil && (s.Mount.Root == "" || (s.Mount.Name == "") == (s.Mount.URL == "")) {
		return Invalid("%s.mount: needs \"root\" (e.g. \"task\") and the \"name\" of a mount the operator configured (e.g. \"files\"), as {\"root\": \"task\", \"name\": \"files\"}", path)
	}
	seen := map[string]bool{}
	for i, g := range s.Guardrails {
		p := fmt.Sprintf("%s.guardrails[%d]", path, i)
		if g.Name == "" || len(g.Name) > 63 {
			return Invalid("%s.name: 1 to 63 characters", p)
		}
		if seen["g:"+g.Name] {
			return Invalid("%s.name: %q is used twice", p, g.Name)
		}
		seen["g:"+g.Name] = true
		if g.Expression == "" || g.Message == "" {
			return Invalid("%s: needs an expression and the message a refused caller reads", p)
		}
	}
	for i, c := range s.Capabilities {
		p := fmt.Sprintf("%s.capabilities[%d]", path, i)
		if !capabilityNameRE.MatchString(c.Name) {
			return Invalid("%s.name: %q must be 1 to 64 letters, digits, '_' or '-'", p, c.Name)
		}
		if seen["c:"+c.Name] {
			return Invalid("%s.name: %q is used twice", p, c.Name)
		}
		seen["c:"+c.Name] = true
		switch c.Kind {
		case CapabilityDelegate:
			if c.Agent == nil {
				return Invalid("%s.agent: a delegate capability names the agent its sub-task runs", p)
			}
			if key := activityOnlyKey(c); key != "" {
				return Invalid("%s.%s: only an activity capability (\"kind\": \"activity\") takes %q; a delegate capability's arguments are its agent's message and files", p, key, key)
			}
		case CapabilityActivity:
			if err := checkActivityCapability(p, c); err != nil {
				return err
			}
		case CapabilityMCP:
			if err := checkMCPCapability(p, c); err != nil {
				return err
			}
		case CapabilityClient:
			if err := checkClientCapability(p, c); err != nil {
				return err
			}
		case CapabilityA2A:
			if err := checkA2ACapability(p, c); err != nil {
				return err
			}
		default:
			return Invalid("%s.kind: %q is not a capability kind; use \"delegate\" (another agent as a sub-task), \"activity\" (an activity of your worker), \"mcp\" (the tools of an MCP server your worker lists), \"a2a\" (a remote agent your worker lists) or \"client\" (a tool your front end runs)", p, c.Kind)
		}
		if c.Kind != CapabilityA2A && c.RemoteAgent != "" {
			return Invalid("%s.remoteAgent: only an a2a capability (\"kind\": \"a2a\") names a remote agent", p)
		}
		if c.Budget != nil {
			if c.Kind != CapabilityDelegate {
				return Invalid("%s.budget: only a delegate capability (\"kind\": \"delegate\") takes a budget: the share of this task's budget its sub-task may spend", p)
			}
			if err := CheckBudget(p+".budget", Budget{Amounts: *c.Budget}); err != nil {
				return err
			}
		}
		if c.Kind != CapabilityMCP && (c.Server != "" || len(c.Tools) > 0 || len(c.AutoApprove) > 0) {
			return Invalid("%s: only an mcp capability (\"kind\": \"mcp\") takes \"server\", \"tools\" and \"autoApprove\"", p)
		}
		if c.Kind == CapabilityClient {
			continue // its approval keys are checked above
		}
		if err := checkApproval(p, c); err != nil {
			return err
		}
	}
	return nil
}

// activityOnlyKey names the first activity-only key c sets, or "".
func activityOnlyKey(c Capability) string {
	switch {
	case c.Activity != "":
		return "activity"
	case c.TaskQueue != "":
		return "taskQueue"
	case hasJSON(c.Parameters):
		return "parameters"
	case c.StartToCloseTimeout != "":
		return "startToCloseTimeout"
	case c.StartTimeout != "":
		return "startTimeout"
	case c.CallTimeout != "":
		return "timeout"
	case c.Retry != nil:
		return "retry"
	}
	return ""
}

// checkName checks an activity type or task queue name: 1 to max
// characters of valid UTF-8, no control characters, no surrounding spaces.
func checkName(path, what, example, v string, max int) error {
	switch {
	case v == "":
		return Invalid("%s: an activity capability needs the %s, e.g. %s", path, what, example)
	case !utf8.ValidString(v) || utf8.RuneCountInString(v) > max:
		return Invalid("%s: %q must be 1 to %d characters of valid UTF-8", path, v, max)
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		return Invalid("%s: %q must not contain control characters", path, v)
	case strings.TrimSpace(v) != v:
		return Invalid("%s: %q must not start or end with spaces", path, v)
	}
	return nil
}

// checkDuration parses a Go duration between min and max (max 0: no bound).
func checkDuration(path, v string, min, max time.Duration, hint string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return Invalid("%s: %q is not a Go duration such as \"30s\", \"5m\" or \"1h\"%s", path, v, hint)
	}
	if d < min || (max > 0 && d > max) {
		if max > 0 {
			return Invalid("%s: %s must be between %s and %s%s", path, v, fmtDuration(min), fmtDuration(max), hint)
		}
		return Invalid("%s: %s must be at least %s%s", path, v, fmtDuration(min), hint)
	}
	return nil
}

// fmtDuration writes round durations as people do: 24h, 1m, 1s, 10ms.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

func checkActivityCapability(p string, c Capability) error {
	if c.Agent != nil {
		return Invalid("%s.agent: only a delegate capability names an agent; an activity capability names its \"activity\" (and optionally \"taskQueue\")", p)
	}
	if err := checkName(p+".activity", "activity type a worker of yours registered", `"activity": "IssueRefund"`, c.Activity, MaxActivityNameChars); err != nil {
		return err
	}
	if c.TaskQueue != "" {
		if err := checkName(p+".taskQueue", "task queue", `"taskQueue": "payments"`, c.TaskQueue, MaxTaskQueueChars); err != nil {
			return err
		}
	}
	if err := checkParameters(p, c); err != nil {
		return err
	}
	if c.StartToCloseTimeout != "" {
		if err := checkDuration(p+".startToCloseTimeout", c.StartToCloseTimeout, MinCapabilityTimeout, MaxCapabilityTimeout, ", or left out for 30s"); err != nil {
			return err
		}
	}
	if c.StartTimeout != "" {
		if err := checkDuration(p+".startTimeout", c.StartTimeout, MinCapabilityTimeout, MaxCapabilityTimeout, ", or left out for 1m"); err != nil {
			return err
		}
	}
	if c.CallTimeout != "" {
		if err := checkDuration(p+".timeout", c.CallTimeout, MinCapabilityTimeout, MaxCapabilityTimeout, ", or left out for 10m"); err != nil {
			return err
		}
		if d, _ := time.ParseDuration(c.CallTimeout); d < c.Timeout() {
			return Invalid("%s.timeout: %s is shorter than one attempt's startToCloseTimeout (%s); make it at least as long", p, c.CallTimeout, fmtDuration(c.Timeout()))
		}
	}
	if c.Retry != nil {
		return checkRetry(p+".retry", c.Retry)
	}
	return nil
}

// checkParameters checks an activity or a client capability's
// parameters: at most MaxCapabilityParamsBytes, in the schema subset.
func checkParameters(p string, c Capability) error {
	if !hasJSON(c.Parameters) {
		return nil
	}
	if len(c.Parameters) > MaxCapabilityParamsBytes {
		return Invalid("%s.parameters: %d bytes, more than %d", p, len(c.Parameters), MaxCapabilityParamsBytes)
	}
	_, err := Compile(p+".parameters", c.Parameters)
	return err
}

// checkRetry checks an activity capability's retry keys (path p.retry).
func checkRetry(rp string, r *CapabilityRetry) error {
	if r.InitialInterval != "" {
		if err := checkDuration(rp+".initialInterval", r.InitialInterval, MinRetryInterval, MaxRetryInitialInterval, ", or left out for 1s"); err != nil {
			return err
		}
	}
	if r.BackoffCoefficient != 0 && (r.BackoffCoefficient < 1 || r.BackoffCoefficient > MaxRetryBackoffCoefficient) {
		return Invalid("%s.backoffCoefficient: %v must be between 1 and %v, or left out for 2", rp, r.BackoffCoefficient, MaxRetryBackoffCoefficient)
	}
	if r.MaximumInterval != "" {
		if err := checkDuration(rp+".maximumInterval", r.MaximumInterval, MinRetryInterval, MaxRetryMaxInterval, ", or left out for 1m"); err != nil {
			return err
		}
		if pol := r.Policy(); pol.MaximumInterval < pol.InitialInterval {
			return Invalid("%s.maximumInterval: %s is shorter than the initial interval (%s); make it at least as long", rp, r.MaximumInterval, fmtDuration(pol.InitialInterval))
		}
	}
	if r.MaximumAttempts < 0 || r.MaximumAttempts > MaxRetryAttempts {
		return Invalid("%s.maximumAttempts: %d must be between 1 and %d (the first attempt included), or left out for %d", rp, r.MaximumAttempts, MaxRetryAttempts, DefaultRetryMaxAttempts)
	}
	return nil
}

// checkApproval checks the approval keys, which every kind takes. The
// condition's CEL is type-checked by package guard (CheckApprovalCondition).
func checkApproval(p string, c Capability) error {
	switch c.Approval {
	case "", ApprovalNever, ApprovalAlways:
	default:
		return Invalid("%s.approval: %q must be \"never\" (the default) or \"always\"; to ask only for some calls, set \"approvalCondition\"", p, c.Approval)
	}
	if c.Approval == ApprovalAlways && c.ApprovalCondition != "" {
		return Invalid("%s.approvalCondition: with \"approval\": \"always\" every call waits for a decision, so the condition would never matter; drop one of the two", p)
	}
	if c.ApprovalCondition != "" && strings.TrimSpace(c.ApprovalCondition) == "" {
		return Invalid("%s.approvalCondition: the expression is empty; write a CEL expression over args, variables and collected that returns bool, e.g. args.amount > 100", p)
	}
	if c.ApprovalTimeout != "" {
		if !c.MayNeedApproval() {
			return Invalid("%s.approvalTimeout: this capability never waits for approval; set \"approval\": \"always\" or an \"approvalCondition\", or drop the timeout", p)
		}
		if err := checkDuration(p+".approvalTimeout", c.ApprovalTimeout, MinApprovalTimeout, 0, ", or left out to wait without limit"); err != nil {
			return err
		}
	}
	return nil
}
