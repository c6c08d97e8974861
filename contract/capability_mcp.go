package contract

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// An mcp capability offers tools of an MCP server the worker's operator
// configured. The caller names the server, never its URL or credentials,
// so a task cannot point a worker at a host of its choosing.

var mcpServerRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// MCPFunctionSeparator joins a capability's name and a tool's name into the
// function the model sees: "everything__echo".
const MCPFunctionSeparator = "__"

func checkMCPCapability(p string, c Capability) error {
	if !mcpServerRE.MatchString(c.Server) {
		if c.Server == "" {
			return Invalid("%s.server: an mcp capability names the MCP server it uses, one the worker lists in AGENT_MCP_SERVERS, e.g. \"server\": \"everything\"", p)
		}
		return Invalid("%s.server: %q must be 1 to %d letters, digits, '_' or '-': the name of a server the worker lists in AGENT_MCP_SERVERS (not a URL)", p, c.Server, MaxMCPServerChars)
	}
	if key := mcpForbiddenKey(c); key != "" {
		return Invalid("%s.%s: an mcp capability does not take %q; it takes \"server\", \"tools\", \"startTimeout\", \"timeout\", \"condition\" and the approval keys (an outage of the server is waited out within \"timeout\")", p, key, key)
	}
	if len(c.Tools) > MaxMCPTools {
		return Invalid("%s.tools: %d names, more than %d; split the tools over several capabilities", p, len(c.Tools), MaxMCPTools)
	}
	if len(c.AutoApprove) > MaxMCPTools {
		return Invalid("%s.autoApprove: %d names, more than %d; use \"*\" for every tool", p, len(c.AutoApprove), MaxMCPTools)
	}
	for i, name := range c.AutoApprove {
		if name == "" || !utf8.ValidString(name) || utf8.RuneCountInString(name) > MaxMCPToolChars || strings.TrimSpace(name) != name {
			return Invalid("%s.autoApprove[%d]: %q must be a tool name the server lists (1 to %d characters, no surrounding spaces), or \"*\" for every tool", p, i, name, MaxMCPToolChars)
		}
	}
	seen := map[string]bool{}
	for i, name := range c.Tools {
		switch {
		case name == "" || !utf8.ValidString(name) || utf8.RuneCountInString(name) > MaxMCPToolChars:
			return Invalid("%s.tools[%d]: %q must be 1 to %d characters of valid UTF-8, a tool name the server lists", p, i, name, MaxMCPToolChars)
		case strings.IndexFunc(name, unicode.IsControl) >= 0 || strings.TrimSpace(name) != name:
			return Invalid("%s.tools[%d]: %q must not contain control characters or surrounding spaces", p, i, name)
		case seen[name]:
			return Invalid("%s.tools[%d]: %q is named twice", p, i, name)
		}
		seen[name] = true
	}
	for _, k := range []struct{ key, v, hint string }{
		{"startTimeout", c.StartTimeout, ", or left out for 1m"},
		{"timeout", c.CallTimeout, ", or left out for 10m"},
	} {
		if k.v != "" {
			if err := checkDuration(p+"."+k.key, k.v, MinCapabilityTimeout, MaxCapabilityTimeout, k.hint); err != nil {
				return err
			}
		}
	}
	return nil
}

// mcpForbiddenKey names the first key c sets that an mcp capability does
// not take, or "": the agent, or an activity-only key other than the two
// bounds an mcp capability shares with activity capabilities.
func mcpForbiddenKey(c Capability) string {
	if c.Agent != nil {
		return "agent"
	}
	c.StartTimeout, c.CallTimeout = "", ""
	return activityOnlyKey(c)
}

// MCPFunctionName is the function name the model sees for a tool of an mcp
// capability: "<capability>__<tool>", with characters function names may
// not hold (anything but letters, digits, '_' and '-') as '_'. The caller
// keeps the mapping back to the tool, and refuses names over 64 characters
// or clashing with another's.
func MCPFunctionName(capability, tool string) string {
	var b strings.Builder
	b.WriteString(capability)
	b.WriteString(MCPFunctionSeparator)
	for _, r := range tool {
		if r < utf8.RuneSelf && (r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// MaxFunctionNameChars bounds a function name, as the providers do.
const MaxFunctionNameChars = 64
