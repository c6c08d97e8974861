package mcptest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strconv"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The standard tools' names.
const (
	ToolEcho          = "echo"
	ToolGetSum        = "get-sum"
	ToolGetTinyImage  = "get-tiny-image"
	ToolGetResource   = "get-resource"
	ToolFail          = "fail"
	ToolNeedsApproval = "needs-approval" // no annotations: destructive and open-world by the MCP defaults
	ToolDeleteNote    = "delete-note"    // annotated destructive, closed-world
)

// readOnly annotates a tool that reads only, within the server's own
// world: it needs no approval (rules version 14).
var readOnly = &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(bool)}

type deleteIn struct {
	Note string `json:"note" jsonschema:"the note to delete"`
}

// ResourceURI and ResourceText are what get-resource embeds.
const (
	ResourceURI  = "test://static/resource/1"
	ResourceText = "Resource 1: This is a plaintext resource"
)

// TinyPNG is the image get-tiny-image returns: a valid 2x2 PNG.
var TinyPNG = tinyPNG()

func tinyPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	img.Set(1, 0, color.RGBA{G: 255, A: 255})
	img.Set(0, 1, color.RGBA{B: 255, A: 255})
	img.Set(1, 1, color.RGBA{R: 255, G: 255, B: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

type echoIn struct {
	Message string `json:"message" jsonschema:"the message to echo"`
}

type sumIn struct {
	A float64 `json:"a" jsonschema:"the first number"`
	B float64 `json:"b" jsonschema:"the second number"`
}

type sumOut struct {
	Sum float64 `json:"sum"`
}

type failIn struct {
	Message string `json:"message,omitempty" jsonschema:"what the failure says"`
}

type approvalIn struct {
	Amount float64 `json:"amount" jsonschema:"the amount to transfer"`
}

func text(s string) *sdk.TextContent { return &sdk.TextContent{Text: s} }

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func (s *Server) addTools(srv *sdk.Server) {
	sdk.AddTool(srv, &sdk.Tool{Name: ToolEcho, Description: "Echoes back the input.", Annotations: readOnly},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			s.count(ToolEcho)
			return &sdk.CallToolResult{Content: []sdk.Content{text("Echo: " + in.Message)}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: ToolGetSum, Description: "Returns the sum of two numbers.", Annotations: readOnly},
		func(_ context.Context, _ *sdk.CallToolRequest, in sumIn) (*sdk.CallToolResult, sumOut, error) {
			s.count(ToolGetSum)
			sum := in.A + in.B
			msg := fmt.Sprintf("The sum of %s and %s is %s.", num(in.A), num(in.B), num(sum))
			return &sdk.CallToolResult{Content: []sdk.Content{text(msg)}}, sumOut{Sum: sum}, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: ToolGetTinyImage, Description: "Returns a tiny PNG image.", Annotations: readOnly},
		func(_ context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			s.count(ToolGetTinyImage)
			return &sdk.CallToolResult{Content: []sdk.Content{
				text("This is a tiny image:"),
				&sdk.ImageContent{Data: TinyPNG, MIMEType: "image/png"},
				text("The image above is the MCP tiny image."),
			}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: ToolGetResource, Description: "Returns an embedded plain-text resource.", Annotations: readOnly},
		func(_ context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			s.count(ToolGetResource)
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: ResourceURI, MIMEType: "text/plain", Text: ResourceText}},
			}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: ToolFail, Description: "Always fails, with an isError result.", Annotations: readOnly},
		func(_ context.Context, _ *sdk.CallToolRequest, in failIn) (*sdk.CallToolResult, any, error) {
			s.count(ToolFail)
			msg := in.Message
			if msg == "" {
				msg = "the tool failed, as it always does"
			}
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{text(msg)}}, nil, nil
		})
	destructive := true
	sdk.AddTool(srv, &sdk.Tool{Name: ToolDeleteNote, Description: "Deletes a note.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: &destructive, OpenWorldHint: new(bool)}},
		func(_ context.Context, _ *sdk.CallToolRequest, in deleteIn) (*sdk.CallToolResult, any, error) {
			s.count(ToolDeleteNote)
			return &sdk.CallToolResult{Content: []sdk.Content{text("Deleted " + in.Note + ".")}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: ToolNeedsApproval, Description: "Transfers an amount; a capability would ask for approval first."},
		func(_ context.Context, _ *sdk.CallToolRequest, in approvalIn) (*sdk.CallToolResult, any, error) {
			s.count(ToolNeedsApproval)
			return &sdk.CallToolResult{Content: []sdk.Content{text("Transferred " + num(in.Amount) + ".")}}, nil, nil
		})
}
