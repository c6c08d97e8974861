package contract

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTaskIOIsFlatAndRoundTrips(t *testing.T) {
	in := TaskIO{
		Message:    []ContentPart{TextPart("hi")},
		ReceivedAt: "2026-11-29T10:00:00.000001Z",
		Values:     map[string]json.RawMessage{"ticket_id": json.RawMessage(`42`)},
	}
	b, err := json.Marshal(Message{Type: TypeInput, TaskIO: in})
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"input","message":[{"mimeType":"text/plain","text":"hi","sizeBytes":2}],"received_at":"2026-11-29T10:00:00.000001Z","ticket_id":42}`, string(b))
	var back Message
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, TypeInput, back.Type)
	require.Equal(t, in, back.TaskIO)
	// committed_at absent until committed; message always present.
	b, _ = json.Marshal(TaskIO{})
	require.JSONEq(t, `{"message":[]}`, string(b))
}

func TestTaskIODecodingErrorsAreCorrective(t *testing.T) {
	for _, bad := range []string{`"text"`, `null`, `{"message":"hi"}`, `{"message":[{"mimeType":1}]}`, `{"received_at":5}`} {
		var v TaskIO
		err := json.Unmarshal([]byte(bad), &v)
		require.Error(t, err, bad)
	}
}

func TestTimesAreUTCWithMicroseconds(t *testing.T) {
	tm, err := ParseTime("2026-11-29T10:00:00+02:00")
	require.NoError(t, err)
	require.Equal(t, "2026-11-29T08:00:00.000000Z", FormatTime(tm))
}

func TestSubsetAcceptsEveryAllowedKeyword(t *testing.T) {
	ok := `{"type":"object","title":"T","description":"D","additionalProperties":false,
	  "properties":{"a":{"type":"array","items":{"type":"string","enum":["x","y"]},"minItems":1,"maxItems":3},
	                "b":{"type":"object","properties":{"c":{"type":"integer"}},"required":["c"]}},
	  "required":["a"]}`
	require.NoError(t, CheckSubset("s", json.RawMessage(ok)))
}

func TestSubsetRefusesEverythingElse(t *testing.T) {
	cases := map[string]string{
		"keyword at the top":       `{"type":"object","$schema":"x"}`,
		"keyword deep":             `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","format":"email"}}}}`,
		"pattern":                  `{"type":"object","properties":{"a":{"type":"string","pattern":"^x"}}}`,
		"oneOf":                    `{"type":"object","oneOf":[]}`,
		"$ref":                     `{"type":"object","properties":{"a":{"$ref":"#"}}}`,
		"non-object top":           `{"type":"array","items":{"type":"string"}}`,
		"top without type":         `{"properties":{}}`,
		"not an object":            `[1]`,
		"invalid JSON":             `{"type":`,
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
		"trailing data":            `{"type":"object"} {}`,
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			err := CheckSubset("agent.parameters", json.RawMessage(raw))
			require.Error(t, err)
			require.Equal(t, ErrInvalidInput, TypeOf(err))
			require.Contains(t, err.Error(), "agent.parameters", "names the path")
		})
	}
	err := CheckSubset("p", json.RawMessage(`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","format":"email"}}}}`))
	require.Contains(t, err.Error(), "p.properties.a.items.format")
}

func TestAgentRefusesWellKnownKeys(t *testing.T) {
	for _, k := range []string{"message", "received_at", "committed_at", "type"} {
		for _, field := range []string{"parameters", "exposes"} {
			spec := AgentSpec{Name: "a", Model: "p/m"}
			raw := json.RawMessage(`{"type":"object","properties":{"` + k + `":{"type":"string"}}}`)
			if field == "parameters" {
				spec.Parameters = raw
			} else {
				spec.Exposes = raw
			}
			_, err := CheckAgent("agent", spec)
			require.Error(t, err, "%s in %s", k, field)
			require.Contains(t, err.Error(), "agent."+field+".properties."+k)
		}
	}
}

func TestAgentFieldRules(t *testing.T) {
	temp := 2.5
	cases := map[string]AgentSpec{
		"upper-case name":   {Name: "Agent", Model: "p/m"},
		"long name":         {Name: strings.Repeat("a", 64), Model: "p/m"},
		"no provider":       {Name: "a", Model: "/m"},
		"no model":          {Name: "a", Model: "p/"},
		"negative tokens":   {Name: "a", Model: "p/m", MaxTokens: -1},
		"temperature":       {Name: "a", Model: "p/m", Temperature: &temp},
		"context too small": {Name: "a", Model: "p/m", MaxTokens: 100, ContextTokens: 100},
		"huge instructions": {Name: "a", Model: "p/m", Instructions: strings.Repeat("x", MaxAgentSpecBytes)},
	}
	for name, spec := range cases {
		_, err := CheckAgent("agent", spec)
		require.Error(t, err, name)
		require.Equal(t, ErrInvalidInput, TypeOf(err), name)
	}
	_, err := CheckAgent("agent", AgentSpec{Name: "support-reply", Model: "openai/gpt-4o-mini", MaxTokens: 400})
	require.NoError(t, err)
}

func agentWithParams(t *testing.T, params string) *Agent {
	a, err := CheckAgent("agent", AgentSpec{Name: "a", Model: "p/m", Parameters: json.RawMessage(params)})
	require.NoError(t, err)
	return a
}

func TestInputRules(t *testing.T) {
	a := agentWithParams(t, `{"type":"object","properties":{"ticket_id":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"},"maxItems":2}},"required":["ticket_id"]}`)
	str := func(s string) *string { return &s }
	part := func(s string) ContentPart { return ContentPart{MimeType: "text/plain", Text: &s} }
	vals := func(kv ...string) map[string]json.RawMessage {
		m := map[string]json.RawMessage{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = json.RawMessage(kv[i+1])
		}
		return m
	}
	good := TaskIO{Message: []ContentPart{part("hi")}, Values: vals("ticket_id", "7")}
	out, err := CheckInput(a, good)
	require.NoError(t, err)
	require.Equal(t, int64(2), *out.Message[0].SizeBytes, "the runtime sets sizeBytes")

	claimed := int64(999)
	p := part("four")
	p.SizeBytes = &claimed
	_, err = CheckInput(a, TaskIO{Message: []ContentPart{p}, Values: vals("ticket_id", "7")})
	require.ErrorContains(t, err, "message[0].sizeBytes: 999, but the text is 4 bytes", "a size that does not match the text is refused")
	negative := int64(-1)
	p.SizeBytes = &negative
	_, err = CheckInput(a, TaskIO{Message: []ContentPart{p}, Values: vals("ticket_id", "7")})
	require.ErrorContains(t, err, "message[0].sizeBytes: -1; a size is a non-negative number of bytes")
	exact := int64(4)
	p.SizeBytes = &exact
	_, err = CheckInput(a, TaskIO{Message: []ContentPart{p}, Values: vals("ticket_id", "7")})
	require.NoError(t, err, "the exact size is accepted")
	many := make([]ContentPart, MaxMessageParts+1)
	for i := range many {
		many[i] = part("x")
	}
	_, err = CheckInput(a, TaskIO{Message: many, Values: vals("ticket_id", "7")})
	require.ErrorContains(t, err, "message holds 101 content parts, more than the 100 one input may hold")
	_, err = CheckInput(a, TaskIO{Message: many[:MaxMessageParts], Values: vals("ticket_id", "7")})
	require.NoError(t, err, "the most parts are accepted")

	meta := func(n int) json.RawMessage {
		// {"k":"xxx..."} serialises to n bytes
		return json.RawMessage(`{"k":"` + strings.Repeat("x", n-8) + `"}`)
	}
	atMeta, overMeta := part("m"), part("m")
	atMeta.Metadata, overMeta.Metadata = meta(MaxMetadataBytes), meta(MaxMetadataBytes+1)
	_, err = CheckInput(a, TaskIO{Message: []ContentPart{atMeta}, Values: vals("ticket_id", "1")})
	require.NoError(t, err, "8,000 bytes of metadata are allowed")

	bad := map[string]TaskIO{
		"received_at set":        {Message: []ContentPart{part("x")}, ReceivedAt: "2026-01-01T00:00:00Z", Values: vals("ticket_id", "1")},
		"committed_at set":       {Message: []ContentPart{part("x")}, CommittedAt: "2026-01-01T00:00:00Z", Values: vals("ticket_id", "1")},
		"no message":             {Values: vals("ticket_id", "1")},
		"empty message":          {Message: []ContentPart{}, Values: vals("ticket_id", "1")},
		"missing required":       {Message: []ContentPart{part("x")}},
		"wrong type":             {Message: []ContentPart{part("x")}, Values: vals("ticket_id", `"7"`)},
		"too many items":         {Message: []ContentPart{part("x")}, Values: vals("ticket_id", "1", "tags", `["a","b","c"]`)},
		"undeclared key":         {Message: []ContentPart{part("x")}, Values: vals("ticket_id", "1", "extra", "1")},
		"both text and file":     {Message: []ContentPart{{MimeType: "text/plain", Text: str("x"), File: str("task://a")}}, Values: vals("ticket_id", "1")},
		"neither":                {Message: []ContentPart{{MimeType: "text/plain"}}, Values: vals("ticket_id", "1")},
		"file without mount":     {Message: []ContentPart{{MimeType: "image/png", File: str("task://a.png")}}, Values: vals("ticket_id", "1")},
		"text not text/plain":    {Message: []ContentPart{{MimeType: "text/html", Text: str("<b>")}}, Values: vals("ticket_id", "1")},
		"no mimeType":            {Message: []ContentPart{{Text: str("x")}}, Values: vals("ticket_id", "1")},
		"100,001 bytes":          {Message: []ContentPart{part(strings.Repeat("a", MaxInlineTextBytes+1))}, Values: vals("ticket_id", "1")},
		"8,001 bytes metadata":   {Message: []ContentPart{overMeta}, Values: vals("ticket_id", "1")},
		"metadata not an object": {Message: []ContentPart{{MimeType: "text/plain", Text: str("x"), Metadata: json.RawMessage(`[1]`)}}, Values: vals("ticket_id", "1")},
		"invalid UTF-8":          {Message: []ContentPart{part("\xff")}, Values: vals("ticket_id", "1")},
		"over the input bound":   {Message: []ContentPart{part(strings.Repeat("a", 90_000)), part(strings.Repeat("a", 90_000)), part(strings.Repeat("a", 90_000))}, Values: vals("ticket_id", "1")},
	}
	for name, in := range bad {
		_, err := CheckInput(a, in)
		require.Error(t, err, name)
		require.Equal(t, ErrInvalidInput, TypeOf(err), name)
	}
	_, err = CheckInput(a, TaskIO{Message: []ContentPart{part(strings.Repeat("a", MaxInlineTextBytes))}, Values: vals("ticket_id", "1")})
	require.NoError(t, err, "exactly 100,000 bytes fit the inline budget")
	_, err = CheckInput(a, bad["100,001 bytes"])
	require.Contains(t, err.Error(), "this agent has no mount to upload it to")

	// An agent without parameters takes no dynamic keys.
	plain, err := CheckAgent("agent", AgentSpec{Name: "a", Model: "p/m"})
	require.NoError(t, err)
	_, err = CheckInput(plain, TaskIO{Message: []ContentPart{part("x")}, Values: vals("x", "1")})
	require.Error(t, err)
}

func TestOutputCarriesEveryExposesKey(t *testing.T) {
	a, err := CheckAgent("agent", AgentSpec{Name: "a", Model: "p/m", Exposes: json.RawMessage(`{"type":"object","properties":{"priority":{"type":"string","enum":["low","high"]},"note":{"type":"string"}},"required":["priority"]}`)})
	require.NoError(t, err)
	require.Empty(t, CheckOutput(a, map[string]json.RawMessage{"priority": json.RawMessage(`"low"`), "note": json.RawMessage(`"n"`)}))
	vs := CheckOutput(a, map[string]json.RawMessage{"priority": json.RawMessage(`"low"`)})
	require.Len(t, vs, 1, "an optional key is still on every output (seed 000 rule 6)")
	require.Equal(t, "/note", vs[0].Path)
	vs = CheckOutput(a, map[string]json.RawMessage{"priority": json.RawMessage(`"urgent"`), "note": json.RawMessage(`"n"`)})
	require.NotEmpty(t, vs)
	require.Equal(t, "/priority", vs[0].Path)
}

func FuzzTaskIODecoding(f *testing.F) {
	for _, s := range []string{`{"message":[{"mimeType":"text/plain","text":"hi"}]}`, `{"message":[],"x":1}`, `{}`, `[]`, `{"message":null}`, `{"received_at":"x","committed_at":"y","type":"input"}`} {
		f.Add(s)
	}
	a, _ := CheckAgent("agent", AgentSpec{Name: "a", Model: "p/m", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`)})
	f.Fuzz(func(t *testing.T, s string) {
		var m Message
		if json.Unmarshal([]byte(s), &m) != nil {
			return
		}
		// Whatever decodes re-encodes and decodes to the same value.
		b, err := json.Marshal(m)
		require.NoError(t, err)
		var back Message
		require.NoError(t, json.Unmarshal(b, &back))
		b2, _ := json.Marshal(back)
		require.JSONEq(t, string(b), string(b2))
		// Checking never panics, and an accepted input obeys the limits.
		if out, err := CheckInput(a, m.TaskIO); err == nil {
			for _, p := range out.Message {
				require.NotNil(t, p.SizeBytes)
				require.LessOrEqual(t, *p.SizeBytes, int64(MaxInlineTextBytes))
			}
		}
	})
}
