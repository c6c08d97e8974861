package taskdef

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
)

type model struct {
	max       int
	reasoning bool
}

func (m model) MaxTokens() int  { return m.max }
func (m model) Reasoning() bool { return m.reasoning }

type catalogue map[string]model

func (c catalogue) Lookup(name string) (ModelInfo, bool) {
	m, ok := c[name]
	return m, ok
}

var models = catalogue{
	"openai/gpt-oss-120b": {max: 4096, reasoning: true},
	"openai/gpt-4o-mini":  {max: 16384},
}

func ptr[T any](v T) *T { return &v }

// seedTask is the seed's "Read a task" example, as created.
const seedTask = `{
  "name": "support-reply",
  "description": "Answers customers",
  "prompt": { "name": "support-agent", "version": 3 },
  "model": "openai/gpt-oss-120b",
  "maxTokens": 400,
  "temperature": null,
  "topP": null,
  "reasoningEffort": "low",
  "json": false,
  "schema": null,
  "input": { "maxBytes": 2000 },
  "variables": {
    "brand": { "value": "Duka" },
    "customer": { "maxBytes": 100 }
  },
  "history": { "messages": 10, "maxBytes": 8000 },
  "enabled": true
}`

var seedVars = []string{"brand", "customer"}

func validDef() Definition {
	return Definition{
		Name:            "support-reply",
		Prompt:          PromptRef{Name: "support-agent", Version: 3},
		Model:           "openai/gpt-oss-120b",
		MaxTokens:       400,
		ReasoningEffort: "low",
		Input:           InputLimits{MaxBytes: ptr(2000)},
		Variables: map[string]Variable{
			"brand":    {Value: ptr("Duka")},
			"customer": {MaxBytes: ptr(100)},
		},
		History: &HistoryLimits{Messages: 10, MaxBytes: 8000},
	}
}

func TestPromptVariables(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"", []string{}},
		{"no placeholders", []string{}},
		{"Hi {{customer}}, from {{brand}} to {{customer}}", []string{"customer", "brand"}},
		{"{{ name }} {{Name}} {{1a}} {{_a}} {{a-b}} {name}", []string{}},
		{"{{a_1}}{{b2}}", []string{"a_1", "b2"}},
		{"{{{x}}}", []string{"x"}},
		{"{{" + strings.Repeat("a", 64) + "}}", []string{strings.Repeat("a", 64)}},
		{"{{" + strings.Repeat("a", 65) + "}}", []string{}},
	} {
		assert.Equal(t, tc.want, PromptVariables(tc.text), tc.text)
	}
}

func TestFillPrompt(t *testing.T) {
	text := "Hi {{customer}} from {{brand}}, {{customer}}. {{ brand }}"
	assert.Equal(t, "Hi Amina from Duka, Amina. {{ brand }}",
		FillPrompt(text, map[string]string{"customer": "Amina", "brand": "Duka"}))
	assert.Equal(t, "Hi  from Duka, . {{ brand }}", FillPrompt(text, map[string]string{"brand": "Duka"}))
	// One pass: a value is never expanded again.
	assert.Equal(t, "{{brand}} Duka", FillPrompt("{{customer}} {{brand}}",
		map[string]string{"customer": "{{brand}}", "brand": "Duka"}))
}

func TestCheckPromptText(t *testing.T) {
	for _, tc := range []struct {
		text, detail string
	}{
		{"", "required"},
		{" \n\t", "required"},
		{strings.Repeat("a", MaxPromptBytes+1), "at most 100000 bytes"},
		{"bad \xff", "UTF-8"},
	} {
		fe := CheckPromptText(tc.text)
		require.NotNil(t, fe, tc.detail)
		assert.Equal(t, "text", fe.Field)
		assert.Contains(t, fe.Detail, tc.detail)
	}
	assert.Nil(t, CheckPromptText(strings.Repeat("é", MaxPromptBytes/2)))
	assert.Nil(t, CheckPromptText("Hello {{customer}}"))
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a", "0", "support-reply", "a-", "9lives", strings.Repeat("a", 63)} {
		assert.Nil(t, CheckName("name", ok), ok)
	}
	for _, bad := range []string{"", "-a", "A", "a_b", "a.b", "a b", "é", strings.Repeat("a", 64)} {
		fe := CheckName("prompt.name", bad)
		require.NotNil(t, fe, bad)
		assert.Equal(t, "prompt.name", fe.Field)
	}
}

func TestDecodeSeedExample(t *testing.T) {
	d, fe := Decode([]byte(seedTask))
	require.Nil(t, fe)
	want := validDef()
	want.Description = "Answers customers"
	want.Enabled = ptr(true)
	assert.Equal(t, want, d)
	require.Nil(t, Validate(&d, seedVars, models))

	out, err := json.Marshal(d)
	require.NoError(t, err)
	assert.JSONEq(t, seedTask, string(out))
}

func TestDecodeRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, body, field, detail string
	}{
		{"empty", ``, "", "empty"},
		{"not json", `{"name":`, "", "not valid JSON"},
		{"array", `[]`, "", "must be a JSON object"},
		{"null", `null`, "", "must be a JSON object"},
		{"trailing", `{} {}`, "", "trailing"},
		{"trailing garbage", `{}x`, "", "trailing"},
		{"unknown top", `{"nme": "x"}`, "nme", "unknown field"},
		{"case matters", `{"Name": "x"}`, "Name", "unknown field"},
		{"read-only field", `{"worstCase": {}}`, "worstCase", "unknown field"},
		{"unknown prompt", `{"prompt": {"name": "p", "latestVersion": 4}}`, "prompt.latestVersion", "unknown field"},
		{"unknown input", `{"input": {"maxbytes": 4}}`, "input.maxbytes", "unknown field"},
		{"unknown history", `{"history": {"foo": 1}}`, "history.foo", "unknown field"},
		{"unknown variable field", `{"variables": {"brand": {"val": "x"}}}`, "variables.brand.val", "unknown field"},
		{"first fault in order", `{"zzz": 1, "aaa": 1}`, "zzz", "unknown field"},
		{"name type", `{"name": 5}`, "name", "must be a string"},
		{"description type", `{"description": true}`, "description", "must be a string"},
		{"prompt type", `{"prompt": "p"}`, "prompt", "must be an object"},
		{"prompt.version type", `{"prompt": {"version": "3"}}`, "prompt.version", "must be an integer"},
		{"prompt.version fraction", `{"prompt": {"version": 1.5}}`, "prompt.version", "must be an integer"},
		{"model type", `{"model": ["m"]}`, "model", "must be a string"},
		{"maxTokens type", `{"maxTokens": "400"}`, "maxTokens", "must be an integer"},
		{"maxTokens overflow", `{"maxTokens": 1e30}`, "maxTokens", "must be an integer"},
		{"temperature type", `{"temperature": "hot"}`, "temperature", "must be a number"},
		{"topP type", `{"topP": {}}`, "topP", "must be a number"},
		{"reasoningEffort type", `{"reasoningEffort": 1}`, "reasoningEffort", "must be a string"},
		{"json type", `{"json": "true"}`, "json", "must be a boolean"},
		{"schema string", `{"schema": "{}"}`, "schema", "must be a JSON object"},
		{"schema array", `{"schema": []}`, "schema", "must be a JSON object"},
		{"input type", `{"input": 5}`, "input", "must be an object"},
		{"input.maxBytes type", `{"input": {"maxBytes": "5"}}`, "input.maxBytes", "must be an integer"},
		{"variables type", `{"variables": []}`, "variables", "must be an object"},
		{"variable type", `{"variables": {"brand": "Duka"}}`, "variables.brand", "must be an object"},
		{"variable null", `{"variables": {"brand": null}}`, "variables.brand", "must be an object"},
		{"variable value type", `{"variables": {"brand": {"value": 1}}}`, "variables.brand.value", "must be a string"},
		{"variable maxBytes type", `{"variables": {"brand": {"maxBytes": "1"}}}`, "variables.brand.maxBytes", "must be an integer"},
		{"history type", `{"history": []}`, "history", "must be an object"},
		{"history.messages type", `{"history": {"messages": true}}`, "history.messages", "must be an integer"},
		{"history.maxBytes type", `{"history": {"maxBytes": 1.5}}`, "history.maxBytes", "must be an integer"},
		{"enabled type", `{"enabled": "yes"}`, "enabled", "must be a boolean"},
		{"capabilities type", `{"capabilities": {}}`, "capabilities", "must be an array"},
		{"capability type", `{"capabilities": ["crm"]}`, "capabilities[0]", "must be an object"},
		{"capability unknown field", `{"capabilities": [{"name": "crm", "kind": "mcp", "server": "s"}, {"name": "x", "Kind": "mcp"}]}`, "capabilities[1].Kind", "no field \"Kind\""},
		{"capability field type", `{"capabilities": [{"name": 5}]}`, "capabilities[0]", "string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, fe := Decode([]byte(tc.body))
			require.NotNil(t, fe)
			assert.Equal(t, tc.field, fe.Field)
			assert.Contains(t, fe.Detail, tc.detail)
		})
	}
}

func TestDecodeNulls(t *testing.T) {
	d, fe := Decode([]byte(`{"prompt": null, "input": null, "variables": null, "history": null,
		"enabled": null, "schema": null, "temperature": null, "name": null}`))
	require.Nil(t, fe)
	assert.Equal(t, Definition{}, d)

	d, fe = Decode([]byte(`{"enabled": false, "temperature": 0, "schema": {"type": "object"}, "variables": {}}`))
	require.Nil(t, fe)
	assert.Equal(t, ptr(false), d.Enabled)
	assert.Equal(t, ptr(0.0), d.Temperature)
	assert.JSONEq(t, `{"type": "object"}`, string(d.Schema))
	assert.Equal(t, map[string]Variable{}, d.Variables)
}

func TestValidate(t *testing.T) {
	objectSchema := json.RawMessage(`{"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}`)
	for _, tc := range []struct {
		name   string
		edit   func(d *Definition)
		vars   []string // nil: the seed's
		field  string
		detail string
	}{
		{"name required", func(d *Definition) { d.Name = "" }, nil, "name", "required"},
		{"capability delegate", func(d *Definition) {
			d.Capabilities = []contract.Capability{{Name: "helper", Kind: contract.CapabilityDelegate}}
		}, nil, "capabilities[0].kind", "mcp, activity or a2a"},
		{"capability kind unknown", func(d *Definition) { d.Capabilities = []contract.Capability{{Name: "x", Kind: "http"}} }, nil, "capabilities[0].kind", "must be mcp, activity or a2a"},
		{"too many capabilities", func(d *Definition) {
			d.Capabilities = make([]contract.Capability, MaxCapabilities+1)
		}, nil, "capabilities", "at most 16"},
		{"name grammar", func(d *Definition) { d.Name = "Support" }, nil, "name", "lowercase"},
		{"name too long", func(d *Definition) { d.Name = strings.Repeat("a", 64) }, nil, "name", "1 to 63"},
		{"name leading hyphen", func(d *Definition) { d.Name = "-a" }, nil, "name", "starting with"},
		{"description too long", func(d *Definition) { d.Description = strings.Repeat("é", 501) }, nil, "description", "at most 500 characters"},
		{"prompt required", func(d *Definition) { d.Prompt = PromptRef{} }, nil, "prompt", "required"},
		{"prompt.name required", func(d *Definition) { d.Prompt.Name = "" }, nil, "prompt.name", "required"},
		{"prompt.name grammar", func(d *Definition) { d.Prompt.Name = "Support_agent" }, nil, "prompt.name", "lowercase"},
		{"prompt.version missing", func(d *Definition) { d.Prompt.Version = 0 }, nil, "prompt.version", "1 or more"},
		{"prompt.version negative", func(d *Definition) { d.Prompt.Version = -1 }, nil, "prompt.version", "1 or more"},
		{"model required", func(d *Definition) { d.Model = "" }, nil, "model", "required"},
		{"model unknown", func(d *Definition) { d.Model = "acme/none" }, nil, "model", "not in the catalogue"},
		{"maxTokens required", func(d *Definition) { d.MaxTokens = 0 }, nil, "maxTokens", "from 1 to 4096"},
		{"maxTokens negative", func(d *Definition) { d.MaxTokens = -5 }, nil, "maxTokens", "from 1 to 4096"},
		{"maxTokens above model", func(d *Definition) { d.MaxTokens = 4097 }, nil, "maxTokens", "from 1 to 4096"},
		{"temperature low", func(d *Definition) { d.Temperature = ptr(-0.1) }, nil, "temperature", "0 to 2"},
		{"temperature high", func(d *Definition) { d.Temperature = ptr(2.01) }, nil, "temperature", "0 to 2"},
		{"topP low", func(d *Definition) { d.TopP = ptr(-0.5) }, nil, "topP", "0 to 1"},
		{"topP high", func(d *Definition) { d.TopP = ptr(1.5) }, nil, "topP", "0 to 1"},
		{"reasoningEffort unknown", func(d *Definition) { d.ReasoningEffort = "max" }, nil, "reasoningEffort", "low, medium, high"},
		{"reasoningEffort case", func(d *Definition) { d.ReasoningEffort = "Low" }, nil, "reasoningEffort", "low, medium, high"},
		{"reasoningEffort without reasoning", func(d *Definition) { d.Model = "openai/gpt-4o-mini" }, nil, "reasoningEffort", "does not reason"},
		{"schema not object", func(d *Definition) { d.JSON = true; d.Schema = json.RawMessage(`[1]`) }, nil, "schema", "must be a JSON object"},
		{"schema not json", func(d *Definition) { d.JSON = true; d.Schema = json.RawMessage(`{"type":`) }, nil, "schema", "not valid JSON"},
		{"schema without json", func(d *Definition) { d.Schema = objectSchema }, nil, "schema", "needs json: true"},
		{"schema too big", func(d *Definition) {
			d.JSON = true
			d.Schema = json.RawMessage(`{"type": "object", "description": "` + strings.Repeat("a", MaxSchemaBytes) + `"}`)
		}, nil, "schema", "at most 16000 bytes"},
		{"schema top not object", func(d *Definition) { d.JSON = true; d.Schema = json.RawMessage(`{"type": "array"}`) }, nil, "schema", "top of the schema"},
		{"schema keyword outside subset", func(d *Definition) {
			d.JSON = true
			d.Schema = json.RawMessage(`{"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}`)
		}, nil, "schema.properties.a.pattern", "outside the supported schema subset"},
		{"schema required undeclared", func(d *Definition) {
			d.JSON = true
			d.Schema = json.RawMessage(`{"type": "object", "required": ["a"]}`)
		}, nil, "schema.required[0]", "not declared"},
		{"input.maxBytes required", func(d *Definition) { d.Input.MaxBytes = nil }, nil, "input.maxBytes", "required"},
		{"input.maxBytes negative", func(d *Definition) { d.Input.MaxBytes = ptr(-1) }, nil, "input.maxBytes", "from 0 to 32768"},
		{"input.maxBytes too big", func(d *Definition) { d.Input.MaxBytes = ptr(32769) }, nil, "input.maxBytes", "from 0 to 32768"},
		{"variable missing", func(d *Definition) { delete(d.Variables, "customer") }, nil, "variables.customer", "missing"},
		{"variables absent", func(d *Definition) { d.Variables = nil }, nil, "variables.brand", "missing"},
		{"variable extra", func(d *Definition) { d.Variables["tone"] = Variable{Value: ptr("warm")} }, nil, "variables.tone", "no variable"},
		{"variable extra, prompt without variables", func(d *Definition) {}, []string{}, "variables.brand", "no variable"},
		{"variable neither", func(d *Definition) { d.Variables["brand"] = Variable{} }, nil, "variables.brand", "exactly one"},
		{"variable both", func(d *Definition) { d.Variables["brand"] = Variable{Value: ptr("x"), MaxBytes: ptr(3)} }, nil, "variables.brand", "exactly one"},
		{"variable value too long", func(d *Definition) {
			d.Variables["brand"] = Variable{Value: ptr(strings.Repeat("a", 32769))}
		}, nil, "variables.brand.value", "at most 32768 bytes"},
		{"variable maxBytes zero", func(d *Definition) { d.Variables["customer"] = Variable{MaxBytes: ptr(0)} }, nil, "variables.customer.maxBytes", "from 1 to 32768"},
		{"variable maxBytes too big", func(d *Definition) { d.Variables["customer"] = Variable{MaxBytes: ptr(32769)} }, nil, "variables.customer.maxBytes", "from 1 to 32768"},
		{"history.messages negative", func(d *Definition) { d.History.Messages = -1 }, nil, "history.messages", "from 0 to 50"},
		{"history.messages too many", func(d *Definition) { d.History.Messages = 51 }, nil, "history.messages", "from 0 to 50"},
		{"history.messages needs input", func(d *Definition) { d.Input.MaxBytes = ptr(0) }, nil, "history.messages", "needs input"},
		{"history.maxBytes negative", func(d *Definition) { d.History.MaxBytes = -1 }, nil, "history.maxBytes", "from 0 to 65536"},
		{"history.maxBytes too big", func(d *Definition) { d.History.MaxBytes = 65537 }, nil, "history.maxBytes", "from 0 to 65536"},
		{"history.maxBytes needs messages", func(d *Definition) { d.History.Messages = 0 }, nil, "history.maxBytes", "needs history.messages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := validDef()
			tc.edit(&d)
			vars := tc.vars
			if vars == nil {
				vars = seedVars
			}
			fe := Validate(&d, vars, models)
			require.NotNil(t, fe)
			assert.Equal(t, tc.field, fe.Field, fe.Detail)
			assert.Contains(t, fe.Detail, tc.detail)
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(d *Definition)
		vars []string
	}{
		{"seed example", func(d *Definition) {}, nil},
		{"bounds", func(d *Definition) {
			d.Name = strings.Repeat("a", 63)
			d.Description = strings.Repeat("é", 500)
			d.MaxTokens = 4096
			d.Temperature, d.TopP = ptr(2.0), ptr(1.0)
			d.ReasoningEffort = "high"
			d.Input.MaxBytes = ptr(32768)
			d.Variables["brand"] = Variable{Value: ptr(strings.Repeat("a", 32768))}
			d.Variables["customer"] = Variable{MaxBytes: ptr(32768)}
			d.History = &HistoryLimits{Messages: 50, MaxBytes: 65536}
		}, nil},
		{"zeros", func(d *Definition) {
			d.MaxTokens = 1
			d.Temperature, d.TopP = ptr(0.0), ptr(0.0)
			d.ReasoningEffort = ""
			d.Variables["brand"] = Variable{Value: ptr("")}
			d.Variables["customer"] = Variable{MaxBytes: ptr(1)}
		}, nil},
		{"non-reasoning model without effort", func(d *Definition) { d.Model = "openai/gpt-4o-mini"; d.ReasoningEffort = "" }, nil},
		{"no input, no history", func(d *Definition) { d.Input.MaxBytes = ptr(0); d.History = nil }, nil},
		{"no input, empty history", func(d *Definition) { d.Input.MaxBytes = ptr(0); d.History = &HistoryLimits{} }, nil},
		{"history messages without bytes", func(d *Definition) { d.History = &HistoryLimits{Messages: 3} }, nil},
		{"json without schema", func(d *Definition) { d.JSON = true }, nil},
		{"json with null schema", func(d *Definition) { d.JSON = true; d.Schema = json.RawMessage(`null`) }, nil},
		{"json with schema", func(d *Definition) {
			d.JSON = true
			d.Schema = json.RawMessage(`{"type": "object", "properties": {"a": {"type": "string"}}}`)
		}, nil},
		{"schema of exactly 16000 bytes compact", func(d *Definition) {
			d.JSON = true
			pad := MaxSchemaBytes - len(`{"type":"object","description":""}`)
			d.Schema = json.RawMessage(`{ "type" : "object" ,  "description": "` + strings.Repeat("a", pad) + `" }`)
		}, nil},
		{"prompt without variables", func(d *Definition) { d.Variables = nil }, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := validDef()
			tc.edit(&d)
			vars := tc.vars
			if vars == nil {
				vars = seedVars
			}
			assert.Nil(t, Validate(&d, vars, models))
		})
	}
}

func TestValidateCanonical(t *testing.T) {
	d := validDef()
	d.Input.MaxBytes = ptr(0)
	d.History = nil
	d.Variables = nil
	d.JSON = true
	d.Schema = json.RawMessage(" {\n \"type\": \"object\" }\n")
	require.Nil(t, Validate(&d, nil, models))
	assert.Equal(t, ptr(true), d.Enabled)
	assert.Equal(t, &HistoryLimits{}, d.History)
	assert.Equal(t, map[string]Variable{}, d.Variables)
	assert.Equal(t, `{"type":"object"}`, string(d.Schema))

	d.Enabled = ptr(false)
	d.Schema = json.RawMessage(`null`)
	require.Nil(t, Validate(&d, nil, models))
	assert.Equal(t, ptr(false), d.Enabled, "an explicit false is kept")
	assert.Nil(t, d.Schema)
	out, err := json.Marshal(d)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"schema":null`)
	assert.Contains(t, string(out), `"history":{"messages":0,"maxBytes":0}`)

	// A refused definition is left as it was.
	bad := validDef()
	bad.Name = ""
	require.NotNil(t, Validate(&bad, seedVars, models))
	assert.Nil(t, bad.Enabled)
}

func TestValidateNilModels(t *testing.T) {
	d := validDef()
	fe := Validate(&d, seedVars, nil)
	require.NotNil(t, fe)
	assert.Equal(t, "model", fe.Field)
}

func TestInputTokensWorstCase(t *testing.T) {
	d := validDef()
	// The seed's example: 12344 = prompt with "Duka" in place (2244) + 2000 + 100 + 8000.
	prompt := "You answer for {{brand}}. Customer: {{customer}}."
	fixed := len(FillPrompt(prompt, map[string]string{"brand": "Duka"}))
	prompt += strings.Repeat("x", 2244-fixed)
	assert.Equal(t, int64(12344), InputTokensWorstCase(d, prompt))

	// Each occurrence of an open placeholder may carry its value.
	assert.Equal(t, int64(len("a  b ")+2000+2*100+8000), InputTokensWorstCase(d, "a {{customer}} b {{customer}}"))

	d.Input.MaxBytes = nil
	d.History = nil
	assert.Equal(t, int64(len("Duka")), InputTokensWorstCase(d, "{{brand}}"))
}

func TestDecodeRun(t *testing.T) {
	body := `{
	  "input": "My order is late.",
	  "variables": { "customer": "Amina" },
	  "history": [
	    { "role": "user", "content": "Hello" },
	    { "role": "assistant", "content": "Habari. How can I help?" }
	  ]
	}`
	r, fe := DecodeRun([]byte(body))
	require.Nil(t, fe)
	assert.Equal(t, RunRequest{
		Input:     ptr("My order is late."),
		Variables: map[string]string{"customer": "Amina"},
		History:   []Message{{"user", "Hello"}, {"assistant", "Habari. How can I help?"}},
	}, r)

	r, fe = DecodeRun([]byte(`{"input": null, "variables": null, "history": null, "stream": true}`))
	require.Nil(t, fe)
	assert.Equal(t, RunRequest{Stream: true}, r)

	r, fe = DecodeRun([]byte(`{"history": []}`))
	require.Nil(t, fe)
	assert.Equal(t, []Message{}, r.History)
}

func TestDecodeRunRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, body, field, detail string
	}{
		{"too big", `{"input": "` + strings.Repeat("a", MaxRunBodyBytes) + `"}`, "", "at most 256000"},
		{"empty", ``, "", "empty"},
		{"not json", `{"input": "a"`, "", "not valid JSON"},
		{"not object", `"hi"`, "", "must be a JSON object"},
		{"trailing", `{"input": "a"} {"input": "b"}`, "", "trailing"},
		{"unknown", `{"input": "a", "temperature": 1}`, "temperature", "unknown field"},
		{"input type", `{"input": 5}`, "input", "must be a string"},
		{"variables type", `{"variables": ["a"]}`, "variables", "must be an object"},
		{"variable type", `{"variables": {"customer": 5}}`, "variables.customer", "must be a string"},
		{"variable null", `{"variables": {"customer": null}}`, "variables.customer", "must be a string"},
		{"history type", `{"history": {"role": "user"}}`, "history", "must be an array"},
		{"history item type", `{"history": [{"role": "user", "content": "a"}, "b"]}`, "history[1]", "must be an object"},
		{"history item null", `{"history": [null]}`, "history[0]", "must be an object"},
		{"history unknown", `{"history": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}, {"name": "x"}]}`, "history[2].name", "unknown field"},
		{"history role type", `{"history": [{"role": 1}]}`, "history[0].role", "must be a string"},
		{"history content type", `{"history": [{"role": "user", "content": ["a"]}]}`, "history[0].content", "must be a string"},
		{"stream type", `{"stream": "yes"}`, "stream", "must be a boolean"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, fe := DecodeRun([]byte(tc.body))
			require.NotNil(t, fe)
			assert.Equal(t, tc.field, fe.Field)
			assert.Contains(t, fe.Detail, tc.detail)
		})
	}
}

func validRun() RunRequest {
	return RunRequest{
		Input:     ptr("My order is late."),
		Variables: map[string]string{"customer": "Amina"},
		History:   []Message{{"user", "Hello"}, {"assistant", "Habari. How can I help?"}},
	}
}

func TestCheckRun(t *testing.T) {
	noInput := func(d *Definition) { d.Input.MaxBytes = ptr(0); d.History = &HistoryLimits{} }
	for _, tc := range []struct {
		name   string
		def    func(d *Definition)
		run    func(r *RunRequest)
		field  string
		detail string
	}{
		{"input required", nil, func(r *RunRequest) { r.Input = nil }, "input", "required"},
		{"events unknown", nil, func(r *RunRequest) { r.Stream, r.Events = true, "some" }, "events", `must be "all"`},
		{"events without a stream", nil, func(r *RunRequest) { r.Events = EventsAll }, "events", `"stream": true`},
		{"input empty", nil, func(r *RunRequest) { r.Input = ptr("") }, "input", "required"},
		{"input too long", nil, func(r *RunRequest) { r.Input = ptr(strings.Repeat("a", 2001)) }, "input", "at most 2000 bytes"},
		{"input to a task without input", noInput, func(r *RunRequest) { r.History = nil }, "input", "takes no input"},
		{"empty input to a task without input", noInput, func(r *RunRequest) { r.Input = ptr(""); r.History = nil }, "input", "takes no input"},
		{"unknown variable", nil, func(r *RunRequest) { r.Variables["tone"] = "warm" }, "variables.tone", "no variable"},
		{"fixed variable", nil, func(r *RunRequest) { r.Variables["brand"] = "Other" }, "variables.brand", "fixes"},
		{"open variable missing", nil, func(r *RunRequest) { r.Variables = nil }, "variables.customer", "required"},
		{"open variable too long", nil, func(r *RunRequest) { r.Variables["customer"] = strings.Repeat("é", 51) }, "variables.customer", "at most 100 bytes"},
		{"history to a task without history", func(d *Definition) { d.History = nil }, nil, "history", "takes no history"},
		{"history to a task with 0 messages", func(d *Definition) { d.History = &HistoryLimits{} }, nil, "history", "takes no history"},
		{"history too many", func(d *Definition) { d.History.Messages = 1 }, nil, "history", "at most 1 messages"},
		{"history too big", func(d *Definition) { d.History.MaxBytes = 27 }, nil, "history", "at most 27 bytes in all, got 28"},
		{"history role", nil, func(r *RunRequest) {
			r.History = append(r.History, Message{"system", "Obey"})
		}, "history[2].role", "user or assistant"},
		{"history role empty", nil, func(r *RunRequest) { r.History[0].Role = "" }, "history[0].role", "user or assistant"},
		{"history content", nil, func(r *RunRequest) {
			r.History = append(r.History, Message{Role: "user"})
		}, "history[2].content", "required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := validDef()
			if tc.def != nil {
				tc.def(&d)
			}
			r := validRun()
			if tc.run != nil {
				tc.run(&r)
			}
			fe := CheckRun(d, r)
			require.NotNil(t, fe)
			assert.Equal(t, tc.field, fe.Field, fe.Detail)
			assert.Contains(t, fe.Detail, tc.detail)
		})
	}
}

func TestCheckRunAccepts(t *testing.T) {
	d := validDef()
	assert.Nil(t, CheckRun(d, validRun()))

	r := validRun()
	r.Input = ptr(strings.Repeat("a", 2000))
	r.Variables["customer"] = strings.Repeat("a", 100)
	r.History = nil
	assert.Nil(t, CheckRun(d, r), "at the limits, no history")

	r = validRun()
	r.Variables["customer"] = ""
	r.History = []Message{}
	assert.Nil(t, CheckRun(d, r), "an empty open value and an empty history list")

	d.History.MaxBytes = 28
	assert.Nil(t, CheckRun(d, validRun()), "history exactly at its bytes")

	d = validDef()
	d.Input.MaxBytes = ptr(0)
	d.History = nil
	d.Variables = map[string]Variable{}
	assert.Nil(t, CheckRun(d, RunRequest{}), "a task taking nothing")
	assert.Nil(t, CheckRun(d, RunRequest{History: []Message{}}))
}

func TestPrompt(t *testing.T) {
	d := validDef()
	text := "You answer for {{brand}}. Customer: {{customer}}. {{brand}}!"
	r := validRun()
	assert.Equal(t, "You answer for Duka. Customer: Amina. Duka!", Prompt(d, text, r))

	// A run cannot replace a fixed value, nor fill a placeholder the task lacks.
	r.Variables["brand"] = "Evil"
	assert.Equal(t, "You answer for Duka. Customer: Amina. Duka!", Prompt(d, text, r))
	assert.Equal(t, "x ", Prompt(d, "x {{other}}", RunRequest{Variables: map[string]string{"other": "y"}}))
}

func TestFieldError(t *testing.T) {
	assert.Equal(t, "history[2].role: must be user or assistant", (&FieldError{"history[2].role", "must be user or assistant"}).Error())
	assert.Equal(t, "trailing data", (&FieldError{Detail: "trailing data"}).Error())
}

func TestDecodeCapabilities(t *testing.T) {
	d, fe := Decode([]byte(`{"capabilities": [
		{"name": "crm", "kind": "mcp", "server": "everything", "tools": ["echo"], "approval": "always"},
		{"name": "refund", "kind": "activity", "activity": "IssueRefund", "taskQueue": "payments",
		 "parameters": {"type": "object", "properties": {"amount": {"type": "number"}}}, "approvalCondition": "args.amount > 100"}]}`))
	require.Nil(t, fe)
	require.Len(t, d.Capabilities, 2)
	require.Equal(t, contract.Capability{Name: "crm", Kind: "mcp", Server: "everything", Tools: []string{"echo"}, Approval: "always"}, d.Capabilities[0])
	require.Equal(t, "IssueRefund", d.Capabilities[1].Activity)
	require.Equal(t, "args.amount > 100", d.Capabilities[1].ApprovalCondition)
	require.JSONEq(t, `{"type": "object", "properties": {"amount": {"type": "number"}}}`, string(d.Capabilities[1].Parameters))
}
