package mcp

import (
	"context"
	"encoding/json"
	"sort"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool is one tool a server lists.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"` // JSON Schema object; {"type":"object"} when the server gives none
	// Hints are the tool's effects as its annotations say, the MCP
	// specification's defaults in place of those it leaves out.
	Hints Hints `json:"hints"`
}

// Hints are a tool's effects by its annotations (MCP ToolAnnotations):
// what the server claims, not what is checked. A tool without annotations
// may change and reach anything: destructiveHint and openWorldHint default
// to true, readOnlyHint to false.
type Hints struct {
	ReadOnly    bool `json:"readOnly,omitempty"`
	Destructive bool `json:"destructive,omitempty"` // meaningful only when not ReadOnly
	OpenWorld   bool `json:"openWorld,omitempty"`
}

// hintsOf applies the specification's defaults to a tool's annotations.
func hintsOf(a *sdk.ToolAnnotations) Hints {
	if a == nil {
		return Hints{Destructive: true, OpenWorld: true}
	}
	return Hints{ReadOnly: a.ReadOnlyHint, Destructive: !a.ReadOnlyHint && (a.DestructiveHint == nil || *a.DestructiveHint),
		OpenWorld: a.OpenWorldHint == nil || *a.OpenWorldHint}
}

// emptyObjectSchema is a tool's input schema when the server gives none.
var emptyObjectSchema = json.RawMessage(`{"type":"object"}`)

// ListTools lists every tool server offers, over every page, sorted by
// name; more than MaxTools, or a schema over MaxInputSchemaBytes, is an
// error. Descriptions are cut at MaxDescriptionBytes.
func (p *Pool) ListTools(ctx context.Context, server string) ([]Tool, error) {
	var tools []Tool
	err := p.do(ctx, server, true, func(ctx context.Context, cs *sdk.ClientSession) error {
		tools = tools[:0]
		seen := map[string]bool{}
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			if len(tools) == MaxTools {
				return boundErrorf("MCP server %q lists more than %d tools (MaxTools); the operator serves fewer tools from it, or splits them over servers", server, MaxTools)
			}
			if seen[t.Name] {
				return boundErrorf("MCP server %q lists tool %q twice; the server's operator must give each tool one name", server, t.Name)
			}
			seen[t.Name] = true
			tool, err := toolFrom(server, t)
			if err != nil {
				return err
			}
			tools = append(tools, tool)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	return tools, nil
}

// toolFrom converts one listed tool, applying the bounds.
func toolFrom(server string, t *sdk.Tool) (Tool, error) {
	schema := emptyObjectSchema
	if t.InputSchema != nil {
		raw, err := json.Marshal(t.InputSchema)
		if err != nil {
			return Tool{}, boundErrorf("MCP server %q: tool %q's input schema is not JSON: %v", server, t.Name, err)
		}
		if string(raw) != "null" {
			schema = raw
		}
	}
	if len(schema) > MaxInputSchemaBytes {
		return Tool{}, boundErrorf("MCP server %q: tool %q's input schema is %d bytes, over %d (MaxInputSchemaBytes); the server's operator must shrink it", server, t.Name, len(schema), MaxInputSchemaBytes)
	}
	return Tool{Name: t.Name, Description: cutUTF8(t.Description, MaxDescriptionBytes), InputSchema: schema, Hints: hintsOf(t.Annotations)}, nil
}

// cutUTF8 cuts s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
