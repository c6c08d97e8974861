package workflows

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/activities"
	"github.com/agenttask/agenttask/internal/guard"
	"github.com/agenttask/agenttask/internal/mount"
)

// CheckAgent is every start-time rule on an agent: its shape and schemas
// (package schema), its mount (package mount), its guardrails and capability
// conditions (package guard, type-checked here), and the agents it delegates to.
func CheckAgent(path string, spec contract.AgentSpec) (*contract.Agent, error) {
	return checkAgent(path, spec, latestRules)
}

func checkAgent(path string, spec contract.AgentSpec, rules rules) (*contract.Agent, error) {
	a, err := contract.CheckAgent(path, spec)
	if err != nil {
		return nil, err
	}
	if depth, deepest := treeDepth(path, spec); depth > contract.MaxAgentDepth && path == "agent" {
		return nil, contract.Invalid("%s: the agent tree is %d agents deep, more than the %d any worker runs; delegate to fewer levels", deepest, depth, contract.MaxAgentDepth)
	}
	if rules.reservedInputID {
		for _, s := range []struct {
			name string
			c    *contract.Compiled
		}{{"parameters", a.Parameters}, {"exposes", a.Exposes}} {
			if s.c != nil && s.c.Declares(contract.KeyInputID) {
				return nil, contract.Invalid("%s.%s.properties.%s: %q is reserved for the runtime (an input's idempotency key, like seed 000's well-known keys); name the property differently", path, s.name, contract.KeyInputID, contract.KeyInputID)
			}
		}
	}
	if spec.Mount != nil {
		// The storage itself is checked against the worker's list at start
		// (mounts.go); here only what the spec alone decides.
		check := mount.CheckRoot(spec.Mount.Root)
		if spec.Mount.URL != "" {
			check = mount.CheckSpec(mount.Spec{Root: spec.Mount.Root, URL: spec.Mount.URL})
		}
		if check != nil {
			return nil, contract.Invalid("%s.mount: %s", path, contract.MessageOf(check))
		}
		a.ParseRef = mount.ParseRef
	}
	if err := guard.CheckGuardrails(path+".guardrails", guard.FromSpec(spec.Guardrails)); err != nil {
		return nil, err
	}
	if spec.Mount != nil && a.Exposes != nil && a.Exposes.Declares("attachments") {
		return nil, contract.Invalid("%s.exposes.properties.attachments: an agent with a mount hands files back under \"attachments\"; name the property differently", path)
	}
	for i, c := range spec.Capabilities {
		p := fmt.Sprintf("%s.capabilities[%d]", path, i)
		if c.Name == "save" || c.Name == "finish" {
			return nil, contract.Invalid("%s.name: %q is a built-in capability; name it differently", p, c.Name)
		}
		if c.Condition != "" {
			if err := guard.CheckExpression(p+".condition", c.Condition); err != nil {
				return nil, err
			}
		}
		if err := guard.CheckApprovalCondition(p+".approvalCondition", c.ApprovalCondition); err != nil {
			return nil, err
		}
		if c.Kind == contract.CapabilityClient && !rules.clientTools {
			return nil, contract.Invalid("%s.kind: \"client\" is not a capability kind of this task's rules; use \"delegate\", \"activity\" or \"mcp\"", p)
		}
		if c.Kind == contract.CapabilityA2A && !rules.a2aAgents {
			return nil, contract.Invalid("%s.kind: \"a2a\" is not a capability kind of this task's rules; use \"delegate\", \"activity\", \"mcp\" or \"client\"", p)
		}
		if c.Kind == contract.CapabilityMCP && !rules.mcpTools {
			return nil, contract.Invalid("%s.kind: \"mcp\" is not a capability kind of this task's rules; use \"delegate\" or \"activity\"", p)
		}
		if c.Kind == contract.CapabilityActivity && rules.sharedQueue {
			if err := checkRuntimeActivity(p, c, rules); err != nil {
				return nil, err
			}
		} else if c.Kind == contract.CapabilityActivity && rules.ownActivityQueue {
			if err := checkOwnActivity(p, c, contract.DefaultTaskQueue, rules); err != nil {
				return nil, err
			}
		}
		if c.Agent != nil && len(c.Agent.Capabilities) > 0 && !rules.nestedSubTasks {
			return nil, contract.Invalid("%s.agent.capabilities: a delegated agent cannot delegate further in this version", p)
		}
		if c.Agent != nil {
			sub, err := checkAgent(p+".agent", *c.Agent, rules)
			if err != nil {
				return nil, err
			}
			if sub.Parameters != nil && len(sub.Parameters.Required()) > 0 {
				return nil, contract.Invalid("%s.agent.parameters: a delegated agent receives only a message, so it cannot require parameters (%s)", p, strings.Join(sub.Parameters.Required(), ", "))
			}
		}
	}
	return a, nil
}

// checkOwnActivity refuses an activity capability that would reach the
// runtime itself: one of its activity types (they trust the keys they are
// given: another task's state could be read or written), or its task queue
// (queue: the runtime's; an empty taskQueue means the task's own).
func checkOwnActivity(p string, c contract.Capability, queue string, rules rules) error {
	if err := checkRuntimeActivity(p, c, rules); err != nil {
		return err
	}
	switch c.TaskQueue {
	case "":
		return contract.Invalid("%s.taskQueue: required; name the task queue your worker that registers %q polls (the runtime's own queue runs only the runtime's activities)", p, c.Activity)
	case queue:
		return contract.Invalid("%s.taskQueue: %q is the runtime's own task queue, which runs only the runtime's activities; run %q on a queue of your worker's", p, queue, c.Activity)
	}
	return nil
}

// checkRuntimeActivity refuses an activity capability naming one of the
// runtime's activity types: they trust the keys they are given, so another
// task's state could be read or written.
func checkRuntimeActivity(p string, c contract.Capability, rules rules) error {
	if activities.IsRuntimeName(c.Activity, rules.mcpTools) || (rules.a2aAgents && slices.Contains(activities.A2ARuntimeNames, c.Activity)) {
		names := activities.RuntimeNames
		if rules.mcpTools {
			names = append(append([]string{}, names...), activities.LaterRuntimeNames...)
		}
		if rules.a2aAgents {
			names = append(names, activities.A2ARuntimeNames...)
		}
		return contract.Invalid("%s.activity: %q is one of the runtime's own activities (%s), which no agent may call; name an activity a worker of yours registers", p, c.Activity, strings.Join(names, ", "))
	}
	return nil
}

// checkTaskQueue refuses activity capabilities on the queue this task runs
// on (a worker may use another queue than DefaultTaskQueue).
func checkTaskQueue(spec contract.AgentSpec, queue string, rules rules) error {
	for i, c := range spec.Capabilities {
		if c.Kind == contract.CapabilityActivity {
			if err := checkOwnActivity(fmt.Sprintf("agent.capabilities[%d]", i), c, queue, rules); err != nil {
				return err
			}
		}
	}
	return nil
}
