package starter

import (
	"fmt"
	"strings"

	"github.com/agenttask/agenttask/contract"
)

// detailsLineCut bounds the instructions' first line in the details.
const detailsLineCut = 160

// Details is a task's static details, which the Web UI shows in its
// Details panel (Markdown): the agent's name and model, the first line of
// its instructions, its capabilities, its mount, the mode and the budget.
// Nothing in it is a secret: instructions hold {{name}} placeholders, never
// the values that fill them.
func Details(args contract.StartArgs) string {
	a := args.Agent
	mode := args.Mode
	if mode == "" {
		mode = contract.ModeConversation
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**agent** %s · **model** %s · **mode** %s\n\n", a.Name, a.Model, mode)
	if line := firstLine(a.Instructions); line != "" {
		fmt.Fprintf(&b, "**instructions** %s\n\n", line)
	}
	if len(a.Capabilities) > 0 {
		caps := make([]string, 0, len(a.Capabilities))
		for _, c := range a.Capabilities {
			switch {
			case c.Kind == contract.CapabilityDelegate && c.Agent != nil:
				caps = append(caps, fmt.Sprintf("%s (delegate to %s, %s)", c.Name, c.Agent.Name, c.Agent.Model))
			case c.Kind == contract.CapabilityActivity:
				caps = append(caps, fmt.Sprintf("%s (activity %s)", c.Name, c.Activity))
			case c.Kind == contract.CapabilityMCP:
				caps = append(caps, fmt.Sprintf("%s (mcp %s)", c.Name, c.Server))
			case c.Kind == contract.CapabilityA2A:
				caps = append(caps, fmt.Sprintf("%s (a2a %s)", c.Name, c.RemoteAgent))
			default:
				caps = append(caps, fmt.Sprintf("%s (%s)", c.Name, c.Kind))
			}
		}
		fmt.Fprintf(&b, "**capabilities** %s\n\n", strings.Join(caps, ", "))
	}
	if m := a.Mount; m != nil {
		where := m.Name
		if where == "" {
			where = "a URL"
		}
		fmt.Fprintf(&b, "**mount** %s:// on %s\n\n", m.Root, where)
	}
	if args.Output != nil {
		b.WriteString("**output** shaped JSON when done\n\n")
	}
	if bud := args.Budget; bud != nil {
		fmt.Fprintf(&b, "**budget** %s\n\n", budgetLine(*bud))
	}
	return strings.TrimSpace(b.String())
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	line = strings.TrimSpace(line)
	if len(line) > detailsLineCut {
		cut := detailsLineCut
		for cut > 0 && (line[cut]&0xC0) == 0x80 { // a UTF-8 boundary
			cut--
		}
		line = line[:cut] + "…"
	}
	return line
}

func budgetLine(b contract.Budget) string {
	var parts []string
	if b.Units != nil {
		parts = append(parts, fmt.Sprintf("%d units", *b.Units))
	}
	if b.InputTokens != nil {
		parts = append(parts, fmt.Sprintf("%d input tokens", *b.InputTokens))
	}
	if b.OutputTokens != nil {
		parts = append(parts, fmt.Sprintf("%d output tokens", *b.OutputTokens))
	}
	on := b.OnExhausted
	if on == "" {
		on = contract.OnExhaustedWait
	}
	return strings.Join(parts, ", ") + " · on exhausted: " + on
}
