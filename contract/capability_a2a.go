package contract

import "regexp"

// An a2a capability calls a remote agent over A2A v1.0 (docs/a2a.md). The
// caller names the agent, never its URL or credentials: the worker's
// operator lists the agents a task may reach (AGENT_A2A_AGENTS), so a task
// cannot point a worker at a host of its choosing. The model calls it with
// {"message": "..."} and reads the remote task's answer; what the remote
// task asks the user (TASK_STATE_INPUT_REQUIRED) waits for a person as an
// approval does, and decide's "result" is the reply sent back.

var remoteAgentRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// A2AParameters is the argument schema an a2a capability offers the model.
const A2AParameters = `{"type":"object","properties":{"message":{"type":"string","description":"What to ask or tell the remote agent, in full: it sees nothing of this conversation but this message."}},"required":["message"]}`

func checkA2ACapability(p string, c Capability) error {
	if !remoteAgentRE.MatchString(c.RemoteAgent) {
		if c.RemoteAgent == "" {
			return Invalid("%s.remoteAgent: an a2a capability names the remote agent it calls, one the worker lists in AGENT_A2A_AGENTS, e.g. \"remoteAgent\": \"billing\"", p)
		}
		return Invalid("%s.remoteAgent: %q must be 1 to 64 letters, digits, '_' or '-': the name of an agent the worker lists in AGENT_A2A_AGENTS (not a URL)", p, c.RemoteAgent)
	}
	if c.Agent != nil {
		return Invalid("%s.agent: an a2a capability names its remote agent in \"remoteAgent\"; \"agent\" is a delegate capability's sub-agent", p)
	}
	t := c
	t.CallTimeout = ""
	if key := activityOnlyKey(t); key != "" {
		return Invalid("%s.%s: an a2a capability does not take %q; it takes \"remoteAgent\", \"description\", \"condition\", \"timeout\" (the whole call, the remote task's waiting included; default 10m) and the approval keys", p, key, key)
	}
	if c.CallTimeout != "" {
		return checkDuration(p+".timeout", c.CallTimeout, MinCapabilityTimeout, MaxCapabilityTimeout, ", or left out for 10m")
	}
	return nil
}
