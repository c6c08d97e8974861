package activities

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/mcp"
)

var listed = []mcp.Tool{
	{Name: "echo", Description: "Echoes.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	{Name: "get-sum", InputSchema: json.RawMessage(`{"type":"object"}`)},
	{Name: "read.file", InputSchema: json.RawMessage(`{"type":"object"}`)},
}

// A capability's tools become functions "<capability>__<tool>", in the
// order named (or the server's sorted order), with names made safe.
func TestChooseToolsNamesFunctions(t *testing.T) {
	tools, err := chooseTools(MCPCapability{Name: "fs", Server: "s"}, listed, map[string]bool{})
	require.NoError(t, err)
	var fns []string
	for _, tl := range tools {
		fns = append(fns, tl.Function)
		require.Equal(t, "fs", tl.Capability)
		require.Equal(t, "s", tl.Server)
	}
	require.Equal(t, []string{"fs__echo", "fs__get-sum", "fs__read_file"}, fns)
	require.Equal(t, "read.file", tools[2].Tool, "the call names the server's own tool name")

	tools, err = chooseTools(MCPCapability{Name: "fs", Server: "s", Tools: []string{"get-sum", "echo"}}, listed, map[string]bool{})
	require.NoError(t, err)
	require.Equal(t, "fs__get-sum", tools[0].Function)
	require.Equal(t, "fs__echo", tools[1].Function)
}

// A named tool the server lacks, a name too long for the providers, or a
// clash with a name the model already sees is refused, saying why.
func TestChooseToolsRefusals(t *testing.T) {
	_, err := chooseTools(MCPCapability{Name: "fs", Server: "s", Tools: []string{"teleport"}}, listed, map[string]bool{})
	require.ErrorContains(t, err, `the MCP server "s" has no tool "teleport"; it lists: echo, get-sum, read.file`)
	require.Equal(t, contract.ErrInvalidInput, contract.TypeOf(err))

	long := MCPCapability{Name: "a-capability-with-a-rather-long-name-for-its-purpose-and-more", Server: "s", Tools: []string{"get-sum"}}
	_, err = chooseTools(long, listed, map[string]bool{})
	require.ErrorContains(t, err, "is over 64 characters")

	_, err = chooseTools(MCPCapability{Name: "fs", Server: "s", Tools: []string{"echo"}}, listed, map[string]bool{"fs__echo": true})
	require.ErrorContains(t, err, "clashes with another the model sees")
}

// Without a mount, binary parts become notes; text and structured content
// are the model's; an error result reads as an error.
func TestRenderMCPResultWithoutAMount(t *testing.T) {
	a := &Activities{}
	r := &mcp.Result{IsError: true, Parts: []mcp.Part{
		{Kind: mcp.KindText, Text: "first"},
		{Kind: mcp.KindImage, Data: []byte{1, 2, 3}, MimeType: "image/png"},
		{Kind: mcp.KindLink, Name: "doc", URI: "file:///doc.txt", MimeType: "text/plain"},
	}, Structured: json.RawMessage(`{"n":1}`)}
	out, err := a.renderMCPResult(context.Background(), CallMCPToolInput{FilePrefix: "mcp/x/t1-c0"}, r)
	require.NoError(t, err)
	require.True(t, out.IsError)
	require.Empty(t, out.Files)
	require.Equal(t, "error: first\n"+
		"[the tool returned an image (image/png, 3 bytes), but this agent has no mount to receive files, so it is not shown]\n"+
		`[resource link "doc": file:///doc.txt (text/plain)]`+"\n"+
		`structured content (JSON): {"n":1}`, out.Content)
}

func TestExtensionOf(t *testing.T) {
	for mt, want := range map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "text/plain; charset=utf-8": ".txt", "audio/wav": ".wav", "x/unknown": ""} {
		require.Equal(t, want, extensionOf(mt), mt)
	}
}

// Only the image types every provider takes are shown as images; an SVG a
// tool returns gets a note instead of failing the whole request.
func TestMediaKindShowsOnlyImagesEveryProviderTakes(t *testing.T) {
	for mt, want := range map[string]string{"image/png": "image", "image/jpeg": "image", "image/gif": "image", "image/webp": "image",
		"image/svg+xml": "", "image/bmp": "", "application/pdf": "document", "text/plain": "text"} {
		require.Equal(t, want, mediaKind(mt), mt)
	}
}
