package a2a

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/agenttask/agenttask/internal/envheader"
)

// EnvAgents lists the remote A2A agents a worker may call:
// "name=cardURL,name=cardURL" (commas or whitespace between pairs), each
// URL the agent's card (…/.well-known/agent-card.json). A task's a2a
// capability names one; it never gives a URL, so a task cannot point a
// worker at a host of its choosing.
const EnvAgents = "AGENT_A2A_AGENTS"

// Agent is one operator-listed remote agent. Header holds what the
// worker's environment gives it: AGENT_A2A_<NAME>_TOKEN (sent as
// "Authorization: Bearer ...") and AGENT_A2A_<NAME>_HEADERS (a JSON object
// of header names to values); <NAME> is the name upper-cased, '-' as '_'.
type Agent struct {
	Name    string
	CardURL string
	Header  http.Header
}

// Agents by name.
type Agents map[string]Agent

// Names lists the agents' names, sorted.
func (a Agents) Names() []string {
	names := make([]string, 0, len(a))
	for name := range a {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// nameRE is the rule contract applies to a capability's "remoteAgent".
var nameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// EnvPrefix is the prefix of an agent's own variables: "AGENT_A2A_<NAME>_".
func EnvPrefix(agent string) string {
	return "AGENT_A2A_" + strings.ToUpper(strings.ReplaceAll(agent, "-", "_")) + "_"
}

// AgentsFromEnv parses AGENT_A2A_AGENTS and each agent's header
// variables; errors say which variable is wrong and show a right one. No
// agents listed is no agents, not an error.
func AgentsFromEnv(getenv func(string) string) (Agents, error) {
	agents := Agents{}
	names := envheader.NewNames(EnvAgents, "agent")
	for _, pair := range envheader.Pairs(getenv(EnvAgents)) {
		ag, err := parseAgentPair(pair)
		if err != nil {
			return nil, err
		}
		prefix := EnvPrefix(ag.Name)
		if err := names.Add(ag.Name, prefix); err != nil {
			return nil, err
		}
		if ag.Header, err = envheader.FromEnv(prefix, getenv); err != nil {
			return nil, err
		}
		agents[ag.Name] = ag
	}
	return agents, nil
}

const examplePair = "billing=https://billing.example.com/a2a/.well-known/agent-card.json"

// parseAgentPair reads one "name=cardURL" of AGENT_A2A_AGENTS.
func parseAgentPair(pair string) (Agent, error) {
	name, raw, ok := strings.Cut(pair, "=")
	if !ok {
		return Agent{}, fmt.Errorf("%s: %q is not name=cardURL; write pairs such as %s=%s", EnvAgents, pair, EnvAgents, examplePair)
	}
	if !nameRE.MatchString(name) {
		return Agent{}, fmt.Errorf("%s: agent name %q must be 1 to 64 letters, digits, '_' or '-', e.g. %s", EnvAgents, name, examplePair)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Agent{}, fmt.Errorf("%s: agent %q: %q is not an http:// or https:// URL of an agent card, e.g. %s", EnvAgents, name, raw, examplePair)
	}
	if u.User != nil {
		return Agent{}, fmt.Errorf("%s: agent %q: the URL carries credentials; put them in %sTOKEN or %sHEADERS instead, where they stay out of logs", EnvAgents, name, EnvPrefix(name), EnvPrefix(name))
	}
	return Agent{Name: name, CardURL: raw}, nil
}
