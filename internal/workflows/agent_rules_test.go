package workflows

import (
	"strings"
	"testing"

	"github.com/agenttask/agenttask/contract"
)

// A capability may not take a built-in's name: the model would be offered
// two tools of that name.
func TestCapabilityNamesExcludeTheBuiltins(t *testing.T) {
	sub := contract.AgentSpec{Name: "helper", Model: "test/echo"}
	for _, name := range []string{"save", "finish"} {
		spec := contract.AgentSpec{Name: "a", Model: "test/echo",
			Capabilities: []contract.Capability{{Name: name, Kind: "delegate", Description: "d", Agent: &sub}}}
		_, err := CheckAgent("agent", spec)
		if contract.TypeOf(err) != contract.ErrInvalidInput {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A bad approvalCondition is refused at start, naming the key.
func TestBadApprovalConditionIsRefused(t *testing.T) {
	spec := contract.AgentSpec{Name: "a", Model: "test/echo", Capabilities: []contract.Capability{{
		Name: "refund", Kind: contract.CapabilityActivity, Activity: "IssueRefund", ApprovalCondition: "args.amount >",
	}}}
	_, err := checkAgent("agent", spec, rulesFor(rulesLatest))
	if err == nil || !strings.Contains(err.Error(), "agent.capabilities[0].approvalCondition") {
		t.Fatalf("got %v", err)
	}
}

// A client capability is an agent's from rules 17 on; a run of earlier
// rules refuses it at start, naming the key.
func TestClientCapabilitiesBelongToRules17(t *testing.T) {
	spec := contract.AgentSpec{Name: "a", Model: "test/echo", Capabilities: []contract.Capability{{Name: "locate", Kind: contract.CapabilityClient}}}
	if _, err := checkAgent("agent", spec, rulesFor(rulesClientTools)); err != nil {
		t.Fatalf("rules 17: %v", err)
	}
	_, err := checkAgent("agent", spec, rulesFor(rulesStreamEvents))
	if err == nil || !strings.Contains(err.Error(), `agent.capabilities[0].kind: "client" is not a capability kind of this task's rules`) {
		t.Fatalf("rules 16: got %v", err)
	}
}
