package mcp_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agenttask/agenttask/internal/mcp"
	"github.com/agenttask/agenttask/internal/mcp/mcptest"
)

func TestCheckArgumentsAgainstListedSchemas(t *testing.T) {
	tools, err := poolFor(t, mcptest.New(t)).ListTools(ctxFor(t), "everything")
	if err != nil {
		t.Fatal(err)
	}
	schema := map[string]json.RawMessage{}
	for _, tool := range tools {
		schema[tool.Name] = tool.InputSchema
	}
	for _, c := range []struct {
		tool, args string
		want       []string // substrings, one per violation, in order; nil: fits
	}{
		{"echo", `{"message":"hi"}`, nil},
		{"get-sum", `{"a":1,"b":2.5}`, nil},
		{"get-tiny-image", `{}`, nil},
		{"echo", `{}`, []string{`/: missing properties: 'message'`}},
		{"echo", `{"message":7}`, []string{"/message: expected string, but got number"}},
		{"get-sum", `{"a":"one","b":"two"}`, []string{"/a: expected number", "/b: expected number"}},
		{"get-sum", `{"a":1}`, []string{`missing properties: 'b'`}},
		{"echo", `["hi"]`, []string{"one JSON object"}},
		{"echo", `"hi"`, []string{"one JSON object"}},
		{"echo", `null`, []string{"one JSON object"}},
		{"echo", `{"message":"a"} {"message":"b"}`, []string{"one JSON object"}},
		{"echo", `{"message":`, []string{"one JSON object"}},
	} {
		got := mcp.CheckArguments(schema[c.tool], json.RawMessage(c.args))
		if len(got) != len(c.want) {
			t.Errorf("%s %s: violations %q, want %d", c.tool, c.args, got, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s %s: violation %d %q does not say %q", c.tool, c.args, i, got[i], w)
			}
		}
	}
}

func TestCheckArgumentsIsDeterministic(t *testing.T) {
	schema := json.RawMessage(`{
		"$schema": "http://json-schema.org/draft-07/schema#",
		"type": "object",
		"properties": {
			"z": {"type": "integer", "minimum": 10},
			"a": {"type": "string", "maxLength": 2},
			"m": {"type": "array", "items": {"type": "boolean"}}
		},
		"required": ["z", "a", "m", "q"],
		"additionalProperties": false
	}`)
	args := json.RawMessage(`{"z": 3, "a": "long", "m": [true, 1, "x"], "extra": 1}`)
	first := mcp.CheckArguments(schema, args)
	if len(first) < 5 {
		t.Fatalf("violations %q: want every one reported", first)
	}
	for i := 1; i < len(first); i++ {
		if first[i-1] > first[i] {
			t.Fatalf("not sorted: %q", first)
		}
	}
	for range 20 {
		if again := mcp.CheckArguments(schema, args); !reflect.DeepEqual(again, first) {
			t.Fatalf("differs between runs:\n%q\n%q", first, again)
		}
	}
	joined := strings.Join(first, "\n")
	for _, w := range []string{"/z:", "/a:", "/m/1:", "/m/2:", `'q'`, "extra"} {
		if !strings.Contains(joined, w) {
			t.Errorf("violations do not mention %s:\n%s", w, joined)
		}
	}
}

func TestCheckArgumentsRefusesSchemasItCannotUse(t *testing.T) {
	for _, schema := range []string{
		`{"type": "object", "properties": {"a": {"$ref": "file:///etc/passwd"}}}`,
		`{"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}`,
		`{"type": 12}`,
		`not json`,
	} {
		got := mcp.CheckArguments(json.RawMessage(schema), json.RawMessage(`{"a": 1}`))
		if len(got) != 1 || !strings.Contains(got[0], "does not compile") {
			t.Errorf("schema %s: %q", schema, got)
		}
	}
}

func TestCheckArgumentsEmptyObjectSchemaTakesAnyObject(t *testing.T) {
	if got := mcp.CheckArguments(json.RawMessage(`{"type":"object"}`), json.RawMessage(`{"anything": [1, {"b": null}]}`)); got != nil {
		t.Fatalf("violations %q", got)
	}
}

func TestCheckArgumentsFollowsRefsInsideTheSchema(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"p":{"$ref":"#/$defs/point"}},"$defs":{"point":{"type":"object","required":["x"],"properties":{"x":{"type":"number"}}}}}`)
	if got := mcp.CheckArguments(schema, json.RawMessage(`{"p":{"x":1}}`)); got != nil {
		t.Fatalf("fitting arguments: %q", got)
	}
	got := mcp.CheckArguments(schema, json.RawMessage(`{"p":{"x":"one"}}`))
	if len(got) != 1 || !strings.HasPrefix(got[0], "/p/x: ") {
		t.Fatalf("violations %q", got)
	}
}
