package llm

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// thinkingBudget is the thinking budget, in tokens, of each reasoningEffort.
// 1024 is the smallest budget the API takes.
var thinkingBudget = map[string]int{"low": 1024, "medium": 4096, "high": 16384}

// jsonInstruction asks for a bare JSON object where no schema is given: the
// Messages API has no json_object mode.
const jsonInstruction = "Answer with one JSON object and nothing else: no prose, no code fence."

// params builds the Messages API request: system blocks, messages, tools,
// limits, thinking, JSON output and the cache breakpoints.
func (c *anthropicClient) params(model string, req Request) (anthropic.MessageNewParams, []option.RequestOption, error) {
	p := anthropic.MessageNewParams{Model: anthropic.Model(model)}
	system, msgs, err := anthropicMessages(req.Messages)
	if err != nil {
		return p, nil, err
	}
	if req.JSONObject && req.JSONSchema == nil {
		system = append(system, anthropic.TextBlockParam{Text: jsonInstruction})
	}
	if req.JSONSchema != nil {
		// Native structured output: the answer is the schema's JSON.
		p.OutputConfig.Format = anthropic.JSONOutputFormatParam{Schema: req.JSONSchema}
	}
	markCacheBreakpoints(system, msgs)
	p.System, p.Messages = system, msgs
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: anthropicTool(t)})
	}

	maxTokens := req.MaxTokens
	if maxTokens <= 0 && c.maxTokens != nil {
		maxTokens = c.maxTokens(c.errs.provider + "/" + model)
	}
	if maxTokens <= 0 {
		maxTokens = DefaultAnthropicMaxTokens
	}
	p.MaxTokens = int64(maxTokens)

	var opts []option.RequestOption
	thinking := thinkingFor(req, maxTokens)
	if thinking > 0 {
		p.Thinking = anthropic.ThinkingConfigParamUnion{OfEnabled: &anthropic.ThinkingConfigEnabledParam{BudgetTokens: int64(thinking)}}
	} else {
		// The SDK no longer declares these; the API still takes them, but
		// not beside thinking.
		if req.Temperature != nil {
			opts = append(opts, option.WithJSONSet("temperature", *req.Temperature))
		}
		if req.TopP != nil {
			opts = append(opts, option.WithJSONSet("top_p", *req.TopP))
		}
	}
	return p, opts, nil
}

// thinkingFor is the thinking budget of req, 0 for none. The budget must be
// below max_tokens, so it is cut to fit (and dropped under the minimum). It
// is also dropped when the conversation's last assistant message called
// tools: the API then wants that message's thinking blocks back, which the
// transcript does not keep.
func thinkingFor(req Request, maxTokens int) int {
	budget, ok := thinkingBudget[strings.ToLower(req.ReasoningEffort)]
	if !ok {
		return 0
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == RoleAssistant {
			if len(req.Messages[i].ToolCalls) > 0 {
				return 0
			}
			break
		}
	}
	if budget >= maxTokens {
		budget = maxTokens - 1
	}
	if budget < 1024 {
		return 0
	}
	return budget
}

func anthropicTool(t Tool) *anthropic.ToolParam {
	schema := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
	for k, v := range t.Parameters {
		switch k {
		case "type":
		case "properties":
			schema.Properties = v
		case "required":
			if list, ok := v.([]any); ok {
				for _, r := range list {
					if s, ok := r.(string); ok {
						schema.Required = append(schema.Required, s)
					}
				}
			} else if list, ok := v.([]string); ok {
				schema.Required = list
			}
		default:
			schema.ExtraFields[k] = v
		}
	}
	tp := &anthropic.ToolParam{Name: t.Name, InputSchema: schema}
	if t.Description != "" {
		tp.Description = anthropic.String(t.Description)
	}
	return tp
}

// anthropicMessages splits off the system messages and converts the rest.
// Tool results go in user messages; consecutive messages of one role are
// merged into one, as the API wants roles to alternate.
func anthropicMessages(ms []Message) ([]anthropic.TextBlockParam, []anthropic.MessageParam, error) {
	var system []anthropic.TextBlockParam
	var out []anthropic.MessageParam
	lastRole := Role("")
	add := func(role Role, blocks []anthropic.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if role == lastRole && len(out) > 0 {
			last := &out[len(out)-1]
			if last.OfUser != nil {
				last.OfUser.Content = append(last.OfUser.Content, blocks...)
			} else {
				last.OfAssistant.Content = append(last.OfAssistant.Content, blocks...)
			}
			return
		}
		lastRole = role
		if role == RoleAssistant {
			out = append(out, anthropic.NewAssistantMessage(blocks...))
		} else {
			out = append(out, anthropic.NewUserMessage(blocks...))
		}
	}
	for i, m := range ms {
		switch m.Role {
		case RoleSystem:
			if t := messageText(m); t != "" {
				system = append(system, anthropic.TextBlockParam{Text: t})
			}
		case RoleTool:
			text := messageText(m)
			if text == "" {
				text = "(no output)" // the API refuses empty text blocks
			}
			add(RoleUser, []anthropic.ContentBlockParamUnion{anthropic.NewToolResultBlock(m.ToolCallID, text, false)})
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if t := messageText(m); t != "" {
				blocks = append(blocks, anthropic.NewTextBlock(t))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, toolInput(tc.Arguments), tc.Name))
			}
			add(RoleAssistant, blocks)
		default:
			blocks, err := anthropicUserBlocks(m)
			if err != nil {
				return nil, nil, fmt.Errorf("messages[%d]: %w", i, err)
			}
			add(RoleUser, blocks)
		}
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("the Messages API needs at least one user message beside the system prompt")
	}
	return system, out, nil
}

func anthropicUserBlocks(m Message) ([]anthropic.ContentBlockParamUnion, error) {
	if len(m.Parts) == 0 {
		if m.Content == "" {
			return nil, nil
		}
		return []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(m.Content)}, nil
	}
	var blocks []anthropic.ContentBlockParamUnion
	for _, p := range m.Parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(p.Text))
			}
		case "image_url":
			mt, data, ok := parseDataURL(p.ImageURL)
			if !ok {
				blocks = append(blocks, anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: p.ImageURL}))
				continue
			}
			blocks = append(blocks, anthropic.NewImageBlockBase64(mt, data))
		case "file":
			mt, data, ok := parseDataURL(p.FileData)
			switch {
			case !ok:
				return nil, fmt.Errorf("a file part must be a base64 data: URL")
			case mt == "application/pdf":
				doc := anthropic.NewDocumentBlock(anthropic.Base64PDFSourceParam{Data: data})
				if p.FileName != "" {
					doc.OfDocument.Title = anthropic.String(p.FileName)
				}
				blocks = append(blocks, doc)
			default:
				return nil, fmt.Errorf("file %q is %s; the Messages API takes PDFs (application/pdf) and images as files", p.FileName, mt)
			}
		}
	}
	return blocks, nil
}

// markCacheBreakpoints puts cache_control on the stable prefix: the last
// system block (tools and instructions) and the last block of the message
// before the newest user message (the older conversation). The next request
// of the conversation starts with the same prefix and reads it from the
// cache. Two breakpoints, within the API's four.
func markCacheBreakpoints(system []anthropic.TextBlockParam, msgs []anthropic.MessageParam) {
	cc := anthropic.NewCacheControlEphemeralParam()
	if len(system) > 0 {
		system[len(system)-1].CacheControl = cc
	}
	newest := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].OfUser != nil {
			newest = i
			break
		}
	}
	if newest < 1 {
		return
	}
	var content []anthropic.ContentBlockParamUnion
	if m := msgs[newest-1]; m.OfUser != nil {
		content = m.OfUser.Content
	} else {
		content = m.OfAssistant.Content
	}
	if len(content) == 0 {
		return
	}
	if p := content[len(content)-1].GetCacheControl(); p != nil {
		*p = cc
	}
}

// toolInput is a call's arguments as the JSON value tool_use.input wants;
// anything but an object (a model's malformed call) is sent as {}.
func toolInput(args string) any {
	var obj map[string]any
	if json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
		return map[string]any{}
	}
	return json.RawMessage(args)
}

// messageText is a message's text: Content, or its text parts joined.
func messageText(m Message) string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// parseDataURL splits "data:<type>;base64,<data>".
func parseDataURL(s string) (mediaType, data string, ok bool) {
	rest, found := strings.CutPrefix(s, "data:")
	if !found {
		return "", "", false
	}
	meta, data, found := strings.Cut(rest, ",")
	if !found {
		return "", "", false
	}
	mediaType, enc, _ := strings.Cut(meta, ";")
	if enc != "base64" {
		return "", "", false
	}
	return strings.ToLower(mediaType), data, true
}
