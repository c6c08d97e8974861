package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Result is a tool call's result in plain values.
type Result struct {
	IsError    bool
	Parts      []Part
	Structured json.RawMessage // structuredContent, nil when absent
}

// Part is one content item: Kind "text" (Text), "image" / "audio" (Data, MimeType),
// "resource" (an embedded resource: URI, MimeType, Text or Data), "link" (a resource link: URI, Name, MimeType).
type Part struct {
	Kind     string
	Text     string
	Data     []byte
	MimeType string
	URI      string
	Name     string
}

// Part kinds.
const (
	KindText     = "text"
	KindImage    = "image"
	KindAudio    = "audio"
	KindResource = "resource"
	KindLink     = "link"
)

// CallTool calls tool on server with args (a JSON object; empty is {}).
// An isError result is a Result, not an error; the error is a transport
// or protocol failure, an *OutageError when a retry may fix it.
func (p *Pool) CallTool(ctx context.Context, server, tool string, args json.RawMessage) (*Result, error) {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if !json.Valid(args) {
		return nil, fmt.Errorf("arguments of MCP tool %q are not valid JSON; give a JSON object, e.g. {}", tool)
	}
	var res *sdk.CallToolResult
	err := p.do(ctx, server, false, func(ctx context.Context, cs *sdk.ClientSession) error {
		var err error
		res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		return err
	})
	if err != nil {
		return nil, err
	}
	return resultFrom(server, tool, res)
}

// resultFrom converts the SDK's result, bounding its data at
// MaxResultBytes. Content kinds a tool result does not carry (sampling's
// tool use, say) are left out.
func resultFrom(server, tool string, res *sdk.CallToolResult) (*Result, error) {
	out := &Result{IsError: res.IsError}
	size := 0
	for _, c := range res.Content {
		var part Part
		switch c := c.(type) {
		case *sdk.TextContent:
			part = Part{Kind: KindText, Text: c.Text}
		case *sdk.ImageContent:
			part = Part{Kind: KindImage, Data: c.Data, MimeType: c.MIMEType}
		case *sdk.AudioContent:
			part = Part{Kind: KindAudio, Data: c.Data, MimeType: c.MIMEType}
		case *sdk.EmbeddedResource:
			if c.Resource == nil {
				continue
			}
			r := c.Resource
			part = Part{Kind: KindResource, URI: r.URI, MimeType: r.MIMEType, Text: r.Text, Data: r.Blob}
		case *sdk.ResourceLink:
			part = Part{Kind: KindLink, URI: c.URI, Name: c.Name, MimeType: c.MIMEType}
		default:
			continue
		}
		size += len(part.Text) + len(part.Data) + len(part.URI) + len(part.Name) + len(part.MimeType)
		out.Parts = append(out.Parts, part)
	}
	if res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("MCP server %q: tool %q's structuredContent is not JSON: %v", server, tool, err)
		}
		out.Structured = raw
		size += len(raw)
	}
	if size > MaxResultBytes {
		return nil, fmt.Errorf("MCP server %q: tool %q answered with %d bytes of data, over %d (MaxResultBytes); ask for less, e.g. a smaller page or range", server, tool, size, MaxResultBytes)
	}
	return out, nil
}
