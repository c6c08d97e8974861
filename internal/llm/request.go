package llm

import (
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
)

// The request in openai-go's types. Only what a Request sets goes on the
// wire: every optional field stays omitted when unset.

func buildParams(model string, req Request) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{Model: model, ReasoningEffort: shared.ReasoningEffort(req.ReasoningEffort)}
	for _, m := range req.Messages {
		p.Messages = append(p.Messages, messageParam(m))
	}
	for _, t := range req.Tools {
		fn := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		if len(t.Parameters) > 0 {
			fn.Parameters = t.Parameters
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if req.MaxTokens != 0 {
		p.MaxTokens = param.NewOpt(int64(req.MaxTokens))
	}
	if req.Temperature != nil {
		p.Temperature = param.NewOpt(*req.Temperature)
	}
	if req.TopP != nil {
		p.TopP = param.NewOpt(*req.TopP)
	}
	if req.OnText != nil {
		// A final chunk with the usage, which a stream otherwise lacks.
		p.StreamOptions.IncludeUsage = param.NewOpt(true)
	}
	switch {
	case req.JSONSchema != nil:
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
			Name: schemaName(req.SchemaName), Schema: req.JSONSchema, Strict: param.NewOpt(false),
		}}
	case req.JSONObject:
		p.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
	}
	return p
}

// messageParam is one message: its content a string, a list of parts, or
// null beside tool calls.
func messageParam(m Message) openai.ChatCompletionMessageParamUnion {
	text := param.NewOpt(m.Content)
	if m.Content == "" && len(m.ToolCalls) > 0 && len(m.Parts) == 0 {
		text = param.Null[string]()
	}
	var u openai.ChatCompletionMessageParamUnion
	var extra map[string]any
	switch m.Role {
	case RoleSystem:
		u.OfSystem = &openai.ChatCompletionSystemMessageParam{}
		u.OfSystem.Content.OfString = text
	case RoleAssistant:
		u.OfAssistant = &openai.ChatCompletionAssistantMessageParam{ToolCalls: toolCallParams(m.ToolCalls)}
		u.OfAssistant.Content.OfString = text
	case RoleTool:
		u.OfTool = &openai.ChatCompletionToolMessageParam{ToolCallID: m.ToolCallID}
		u.OfTool.Content.OfString = text
	default:
		u.OfUser = &openai.ChatCompletionUserMessageParam{}
		u.OfUser.Content.OfString = text
		if m.Role != RoleUser {
			extra = map[string]any{"role": m.Role}
		}
	}
	if len(m.Parts) > 0 {
		if u.OfUser != nil {
			u.OfUser.Content = openai.ChatCompletionUserMessageParamContentUnion{OfArrayOfContentParts: partParams(m.Parts)}
		} else {
			// The typed content of other roles takes text parts only; the
			// protocol's parts go on as they are.
			if extra == nil {
				extra = map[string]any{}
			}
			extra["content"] = partParams(m.Parts)
		}
	}
	if extra != nil {
		setExtra(u, extra)
	}
	return u
}

func setExtra(u openai.ChatCompletionMessageParamUnion, extra map[string]any) {
	switch {
	case u.OfSystem != nil:
		u.OfSystem.SetExtraFields(extra)
	case u.OfAssistant != nil:
		u.OfAssistant.SetExtraFields(extra)
	case u.OfTool != nil:
		u.OfTool.SetExtraFields(extra)
	default:
		u.OfUser.SetExtraFields(extra)
	}
}

func partParams(parts []Part) []openai.ChatCompletionContentPartUnionParam {
	out := make([]openai.ChatCompletionContentPartUnionParam, len(parts))
	for i, p := range parts {
		switch p.Type {
		case "text":
			out[i] = textPart(p.Type, p.Text)
		case "image_url":
			out[i] = openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: p.ImageURL})
		case "file":
			f := openai.ChatCompletionContentPartFileFileParam{FileData: param.NewOpt(p.FileData)}
			if p.FileName != "" {
				f.Filename = param.NewOpt(p.FileName)
			}
			out[i] = openai.FileContentPart(f)
		default:
			// A type openai-go does not know goes on with its text.
			out[i] = textPart(p.Type, p.Text)
		}
	}
	return out
}

// textPart is a text part, or another type with its text; an empty text
// is left out, as before openai-go.
func textPart(typ, text string) openai.ChatCompletionContentPartUnionParam {
	t := openai.ChatCompletionContentPartTextParam{Text: text}
	extra := map[string]any{}
	if typ != "text" {
		extra["type"] = typ
	}
	if text == "" {
		extra["text"] = param.Omit
	}
	if len(extra) > 0 {
		t.SetExtraFields(extra)
	}
	return openai.ChatCompletionContentPartUnionParam{OfText: &t}
}

func toolCallParams(calls []ToolCall) []openai.ChatCompletionMessageToolCallUnionParam {
	var out []openai.ChatCompletionMessageToolCallUnionParam
	for _, tc := range calls {
		out = append(out, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
			ID:       tc.ID,
			Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments},
		}})
	}
	return out
}
