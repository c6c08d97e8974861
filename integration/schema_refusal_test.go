package integration

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/starter"
)

// Every keyword outside the schema subset, and each malformed form of the
// allowed ones, refuses the task: synchronously through the starter, and in
// the workflow's first task when a plain SDK client starts it.
var badOutputSchemas = map[string]string{
	"$schema":                  `{"type":"object","$schema":"x"}`,
	"format":                   `{"type":"object","properties":{"a":{"type":"string","format":"email"}}}`,
	"pattern":                  `{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}}`,
	"minLength":                `{"type":"object","properties":{"a":{"type":"string","minLength":1}}}`,
	"maximum":                  `{"type":"object","properties":{"a":{"type":"number","maximum":1}}}`,
	"oneOf":                    `{"type":"object","oneOf":[]}`,
	"anyOf":                    `{"type":"object","anyOf":[]}`,
	"allOf":                    `{"type":"object","allOf":[]}`,
	"not":                      `{"type":"object","not":{}}`,
	"$ref":                     `{"type":"object","properties":{"a":{"$ref":"#"}}}`,
	"$defs":                    `{"type":"object","$defs":{}}`,
	"const":                    `{"type":"object","properties":{"a":{"const":1}}}`,
	"default":                  `{"type":"object","properties":{"a":{"type":"string","default":"x"}}}`,
	"patternProperties":        `{"type":"object","patternProperties":{}}`,
	"uniqueItems":              `{"type":"object","properties":{"a":{"type":"array","uniqueItems":true}}}`,
	"non-object top":           `{"type":"array","items":{"type":"string"}}`,
	"top without type":         `{"properties":{}}`,
	"not an object":            `[1]`,
	"additionalProperties obj": `{"type":"object","additionalProperties":{"type":"string"}}`,
	"type list":                `{"type":"object","properties":{"a":{"type":["string","null"]}}}`,
	"unknown type":             `{"type":"object","properties":{"a":{"type":"date"}}}`,
	"properties not object":    `{"type":"object","properties":[]}`,
	"property not a schema":    `{"type":"object","properties":{"a":true}}`,
	"required not list":        `{"type":"object","properties":{"a":{"type":"string"}},"required":"a"}`,
	"required undeclared":      `{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`,
	"required twice":           `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","a"]}`,
	"items tuple":              `{"type":"object","properties":{"a":{"type":"array","items":[{"type":"string"}]}}}`,
	"items on a string":        `{"type":"object","properties":{"a":{"type":"string","items":{"type":"string"}}}}`,
	"enum empty":               `{"type":"object","properties":{"a":{"type":"string","enum":[]}}}`,
	"enum not list":            `{"type":"object","properties":{"a":{"type":"string","enum":"x"}}}`,
	"minItems negative":        `{"type":"object","properties":{"a":{"type":"array","minItems":-1}}}`,
	"maxItems fractional":      `{"type":"object","properties":{"a":{"type":"array","maxItems":1.5}}}`,
	"minItems above maxItems":  `{"type":"object","properties":{"a":{"type":"array","minItems":3,"maxItems":1}}}`,
	"title not string":         `{"type":"object","title":1}`,
	"description not string":   `{"type":"object","properties":{"a":{"type":"string","description":{}}}}`,
	"properties on array":      `{"type":"object","properties":{"a":{"type":"array","properties":{}}}}`,
}

func TestOutputSchemasOutsideTheSubsetAreRefused(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	i := 0
	for name, raw := range badOutputSchemas {
		i++
		t.Run(name, func(t *testing.T) {
			// Through the starter: refused before anything is sent.
			_, err := h.tasks.Start(ctxT(t, 10*time.Second), contract.StartArgs{
				Agent:  contract.AgentSpec{Name: "a", Model: "test/echo"},
				Output: &contract.OutputSpec{Instructions: "i", Schema: json.RawMessage(raw), Model: "test/shaper"},
			}, starter.StartOptions{})
			require.Equal(t, contract.ErrInvalidOutput, contract.TypeOf(err), "%v", err)
			require.Contains(t, err.Error(), "output.schema")
			// Through a plain SDK client: the workflow refuses it.
			run := startTask(t, h, "bad-output-"+string(rune('a'+i%26))+string(rune('a'+i/26)), map[string]any{
				"agent":  agent("a"),
				"output": map[string]any{"instructions": "i", "schema": json.RawMessage(raw), "model": "test/shaper"},
			})
			err = run.Get(ctxT(t, 20*time.Second), nil)
			require.Equal(t, contract.ErrInvalidOutput, errType(err), "%v", err)
		})
	}
	require.Zero(t, h.model.CallCount(), "no model call for a refused task")
}
