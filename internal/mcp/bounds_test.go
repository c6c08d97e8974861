package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenttask/agenttask/internal/mcp"
	"github.com/agenttask/agenttask/internal/mcp/mcptest"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func objectSchema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }

func textTool(name, description string, schema json.RawMessage) mcptest.Option {
	return mcptest.WithTool(&sdk.Tool{Name: name, Description: description, InputSchema: schema},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name}}}, nil
		})
}

// slowTool answers only once block is closed or its call is cancelled.
func slowTool(block <-chan struct{}) (*sdk.Tool, sdk.ToolHandler) {
	return &sdk.Tool{Name: "slow", InputSchema: objectSchema()},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			select {
			case <-block:
			case <-ctx.Done():
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "late"}}}, nil
		}
}

// bigTool answers with n bytes of text.
func bigTool(n int) mcptest.Option {
	return mcptest.WithTool(&sdk.Tool{Name: "big-" + strconv.Itoa(n), InputSchema: objectSchema()},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Repeat("x", n)}}}, nil
		})
}

func TestListingOverMaxToolsIsAnError(t *testing.T) {
	var opts []mcptest.Option
	for i := range mcp.MaxTools - 7 { // the 7 standard tools make it exactly MaxTools
		opts = append(opts, textTool(fmt.Sprintf("extra-%03d", i), "", objectSchema()))
	}
	tools, err := poolFor(t, mcptest.New(t, opts...)).ListTools(ctxFor(t), "everything")
	if err != nil || len(tools) != mcp.MaxTools {
		t.Fatalf("exactly MaxTools: %d tools, %v", len(tools), err)
	}
	opts = append(opts, textTool("one-too-many", "", objectSchema()))
	_, err = poolFor(t, mcptest.New(t, opts...)).ListTools(ctxFor(t), "everything")
	if err == nil || mcp.IsOutage(err) || !strings.Contains(err.Error(), strconv.Itoa(mcp.MaxTools)) {
		t.Fatalf("MaxTools+1: %v", err)
	}
}

func TestListingBoundsSchemaAndDescription(t *testing.T) {
	long := strings.Repeat("d", mcp.MaxDescriptionBytes+100)
	srv := mcptest.New(t, textTool("wordy", long, objectSchema()))
	tools, err := poolFor(t, srv).ListTools(ctxFor(t), "everything")
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if tool.Name == "wordy" && tool.Description != long[:mcp.MaxDescriptionBytes] {
			t.Errorf("description of %d bytes, want %d", len(tool.Description), mcp.MaxDescriptionBytes)
		}
	}

	big := json.RawMessage(`{"type":"object","description":"` + strings.Repeat("s", mcp.MaxInputSchemaBytes) + `"}`)
	_, err = poolFor(t, mcptest.New(t, textTool("huge-schema", "", big))).ListTools(ctxFor(t), "everything")
	if err == nil || mcp.IsOutage(err) || !strings.Contains(err.Error(), "huge-schema") || !strings.Contains(err.Error(), strconv.Itoa(mcp.MaxInputSchemaBytes)) {
		t.Fatalf("schema over the bound: %v", err)
	}
}

func TestResultBound(t *testing.T) {
	srv := mcptest.New(t, bigTool(1<<20), bigTool(mcp.MaxResultBytes+1), bigTool(2*mcp.MaxResultBytes))
	p := poolFor(t, srv)
	res := call(t, p, "big-"+strconv.Itoa(1<<20), `{}`)
	if len(res.Parts) != 1 || len(res.Parts[0].Text) != 1<<20 {
		t.Fatalf("1 MiB result: %d parts", len(res.Parts))
	}
	for _, n := range []int{mcp.MaxResultBytes + 1, 2 * mcp.MaxResultBytes} {
		// Megabytes through the SDK's JSON take seconds under -race.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err := p.CallTool(ctx, "everything", "big-"+strconv.Itoa(n), json.RawMessage(`{}`))
		if err == nil || mcp.IsOutage(err) || !strings.Contains(err.Error(), "MaxResultBytes") {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
	// The pool is still usable.
	call(t, p, "echo", `{"message":"after"}`)
}
