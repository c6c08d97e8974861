package tasksapi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/a2a"
	"github.com/agenttask/agenttask/internal/taskdef"
	"github.com/agenttask/agenttask/internal/workflows"
)

// A stored task's capabilities (docs/tasks-api.md#capabilities) are an
// agent's: each run's agent has them. They are checked at creation by the
// rules the runtime applies at a run's start, so a task that is stored
// starts; what only a worker knows (its MCP servers, when this API is not
// told them; the activity's worker) is met at run time, where a call that
// cannot run is answered to the model as an error.

// capabilityPath is the path CheckAgent's messages start with here.
const capabilityPath = "task"

// checkCapabilities checks d's capabilities as an agent's (taskdef has
// checked their kinds and count).
func (s *server) checkCapabilities(d taskdef.Definition) error {
	if len(d.Capabilities) == 0 {
		return nil
	}
	spec := contract.AgentSpec{Name: d.Name, Model: d.Model, MaxTokens: d.MaxTokens, Capabilities: d.Capabilities}
	if _, err := workflows.CheckAgent(capabilityPath, spec); err != nil {
		msg := contract.MessageOf(err)
		if path, detail, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(path, capabilityPath+".capabilities") {
			return invalid(strings.TrimPrefix(path, capabilityPath+"."), detail)
		}
		return invalid("capabilities", msg)
	}
	for i, c := range d.Capabilities {
		if c.Kind == contract.CapabilityMCP && s.cfg.MCPServers != nil && !slices.Contains(s.cfg.MCPServers, c.Server) {
			return invalid(fmt.Sprintf("capabilities[%d].server", i), fmt.Sprintf("no MCP server named %q: the workers list %s (AGENT_MCP_SERVERS)", c.Server, strings.Join(s.cfg.MCPServers, ", ")))
		}
		if c.Kind == contract.CapabilityA2A && s.cfg.A2AAgents != nil && !slices.Contains(s.cfg.A2AAgents, c.RemoteAgent) {
			return invalid(fmt.Sprintf("capabilities[%d].remoteAgent", i), fmt.Sprintf("no remote agent named %q: the workers list %s (%s)", c.RemoteAgent, strings.Join(s.cfg.A2AAgents, ", "), a2a.EnvAgents))
		}
	}
	return nil
}
