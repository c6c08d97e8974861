package llm

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/agenttask/agenttask/contract"
)

// geminiClient speaks the Gemini API through google.golang.org/genai, one
// attempt per call (its retries off), its errors mapped as the other clients'.
// The genai client is built on the first call: building it reads nothing from
// the network, but it refuses a missing key, which is then a corrective error.
type geminiClient struct {
	errs *endpointClient
	once sync.Once
	sdk  *genai.Client
	err  error
}

func newGeminiClient(provider string, ep Endpoint, hc *http.Client, timeout time.Duration) *geminiClient {
	return &geminiClient{errs: &endpointClient{provider: provider, endpoint: ep, http: hc, timeout: timeout}}
}

func (c *geminiClient) client(ctx context.Context) (*genai.Client, error) {
	c.once.Do(func() {
		one := int32(1)
		base := c.errs.endpoint.BaseURL
		if base == "" {
			base = DefaultGeminiBaseURL
		}
		c.sdk, c.err = genai.NewClient(ctx, &genai.ClientConfig{
			APIKey:     c.errs.endpoint.APIKey,
			Backend:    genai.BackendGeminiAPI,
			HTTPClient: c.errs.http,
			HTTPOptions: genai.HTTPOptions{
				BaseURL:      strings.TrimRight(base, "/") + "/",
				RetryOptions: &genai.HTTPRetryOptions{Attempts: &one}, // Temporal owns retries
			},
		})
	})
	return c.sdk, c.err
}

func (c *geminiClient) complete(ctx context.Context, model string, req Request) (Response, error) {
	sdk, err := c.client(ctx)
	if err != nil {
		// Configuration is fixed while a task waits, as a 401 is.
		return Response{}, c.errs.errorf(model, true, 0, err, "cannot set up the Gemini client (set the provider's API key, e.g. %s): %v", EnvGeminiAPIKey, err)
	}
	contents, cfg, err := geminiRequest(req)
	if err != nil {
		return Response{}, c.errs.errorf(model, false, 0, err, "cannot build the request: %v", err)
	}
	if req.OnText == nil {
		attemptCtx, cancel := context.WithTimeout(ctx, c.errs.timeout)
		defer cancel()
		resp, err := sdk.Models.GenerateContent(attemptCtx, model, contents, cfg)
		if err != nil {
			return Response{}, c.mapError(ctx, attemptCtx, model, err)
		}
		var g geminiAnswer
		g.add(resp, nil)
		return g.response(c.errs.provider, model), nil
	}
	// A healthy stream may outlast the timeout, so it bounds each wait for
	// a chunk instead (not the time OnText takes).
	attemptCtx, idle, cancel := startIdleTimer(ctx, c.errs.timeout)
	defer cancel()
	var g geminiAnswer
	for resp, err := range sdk.Models.GenerateContentStream(attemptCtx, model, contents, cfg) {
		idle.timer.Stop()
		if err != nil {
			return Response{}, c.mapError(ctx, attemptCtx, model, err)
		}
		g.add(resp, req.OnText)
		idle.timer.Reset(c.errs.timeout)
	}
	if g.finish == "" {
		return Response{}, c.errs.errorf(model, true, http.StatusOK, nil, "stream ended before the answer was complete")
	}
	return g.response(c.errs.provider, model), nil
}

// geminiAnswer gathers one answer from a response or a stream's chunks.
type geminiAnswer struct {
	prefix string // of the IDs made up for unnamed calls: unique per answer
	model  string
	text   strings.Builder
	calls  []ToolCall
	finish genai.FinishReason
	usage  *genai.GenerateContentResponseUsageMetadata
}

func (g *geminiAnswer) add(resp *genai.GenerateContentResponse, onText func(string)) {
	if resp.ModelVersion != "" {
		g.model = resp.ModelVersion
	}
	if resp.UsageMetadata != nil {
		g.usage = resp.UsageMetadata
	}
	if f := resp.PromptFeedback; f != nil && f.BlockReason != "" {
		// A blocked prompt has no candidates: a refusal, not a cut stream
		// that a retry would repeat for ever.
		g.finish = genai.FinishReasonProhibitedContent
		if g.text.Len() == 0 {
			g.text.WriteString("the provider blocked the prompt: " + string(f.BlockReason))
			if f.BlockReasonMessage != "" {
				g.text.WriteString(" (" + f.BlockReasonMessage + ")")
			}
		}
		return
	}
	if len(resp.Candidates) == 0 {
		return
	}
	cand := resp.Candidates[0]
	if cand.FinishReason != "" {
		g.finish = cand.FinishReason
	}
	if cand.Content == nil {
		return
	}
	for _, p := range cand.Content.Parts {
		switch {
		case p.Thought:
		case p.FunctionCall != nil:
			args, _ := json.Marshal(p.FunctionCall.Args)
			if p.FunctionCall.Args == nil {
				args = []byte("{}")
			}
			id := p.FunctionCall.ID
			if id == "" { // Gemini may leave calls unnamed; the transcript pairs results by ID
				id = fmt.Sprintf("call_%s_%d", g.idPrefix(), len(g.calls))
			}
			g.calls = append(g.calls, ToolCall{ID: id, Name: p.FunctionCall.Name, Arguments: string(args), Signature: p.ThoughtSignature})
		case p.Text != "":
			g.text.WriteString(p.Text)
			if onText != nil {
				onText(p.Text)
			}
		}
	}
}

// response maps the answer.
func (g *geminiAnswer) response(provider, model string) Response {
	out := Response{Text: g.text.String(), Provider: provider, Model: g.model, ToolCalls: g.calls}
	if out.Model == "" {
		out.Model = model
	}
	switch g.finish {
	case genai.FinishReasonMaxTokens:
		out.StopReason = StopMaxTokens
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII:
		out.StopReason = StopRefused
	default:
		out.StopReason = StopEnd
	}
	if g.usage != nil {
		out.Usage = geminiUsage(g.usage)
	}
	return out
}

// geminiUsage is Gemini's usage as contract.Usage: promptTokenCount already
// includes the cached tokens, and the thoughts are output.
func geminiUsage(u *genai.GenerateContentResponseUsageMetadata) contract.Usage {
	return contract.Usage{InputTokens: int(u.PromptTokenCount), OutputTokens: int(u.CandidatesTokenCount + u.ThoughtsTokenCount),
		CacheReadTokens: int(u.CachedContentTokenCount)}
}

// mapError maps a genai error: APIError carries the HTTP status (its
// headers are not kept, so a 429's wait comes from its RetryInfo detail).
func (c *geminiClient) mapError(ctx, attemptCtx context.Context, model string, err error) *Error {
	var apiErr genai.APIError
	var apiPtr *genai.APIError
	switch {
	case errors.As(err, &apiErr):
	case errors.As(err, &apiPtr):
		apiErr = *apiPtr
	default:
		return c.errs.transportError(ctx, attemptCtx, model, err)
	}
	long := isContextLength(apiErr.Code, apiErr.Message)
	e := c.errs.errorf(model, long || retryableStatus(apiErr.Code), apiErr.Code, err,
		"HTTP %s: %s", statusText(apiErr.Code), truncate(apiErr.Message, maxEndpointMessage))
	e.ContextLength = long
	e.RetryAfter = geminiRetryDelay(apiErr.Details)
	return e
}

// geminiRetryDelay reads google.rpc.RetryInfo's retryDelay ("30s").
func geminiRetryDelay(details []map[string]any) time.Duration {
	for _, d := range details {
		if s, ok := d["retryDelay"].(string); ok {
			if v, err := time.ParseDuration(s); err == nil && v > 0 {
				return v
			}
		}
	}
	return 0
}

// geminiRequest converts the request: system messages become the system
// instruction, tool results function responses, data: URLs inline data.
func geminiRequest(req Request) ([]*genai.Content, *genai.GenerateContentConfig, error) {
	cfg := &genai.GenerateContentConfig{MaxOutputTokens: int32(req.MaxTokens)}
	if req.Temperature != nil {
		t := float32(*req.Temperature)
		cfg.Temperature = &t
	}
	if req.TopP != nil {
		t := float32(*req.TopP)
		cfg.TopP = &t
	}
	if b, ok := thinkingBudget[strings.ToLower(req.ReasoningEffort)]; ok {
		budget := int32(b)
		cfg.ThinkingConfig = &genai.ThinkingConfig{ThinkingBudget: &budget}
	}
	if req.JSONSchema != nil {
		cfg.ResponseMIMEType, cfg.ResponseJsonSchema = "application/json", req.JSONSchema
	} else if req.JSONObject {
		cfg.ResponseMIMEType = "application/json"
	}
	if len(req.Tools) > 0 {
		var decls []*genai.FunctionDeclaration
		for _, t := range req.Tools {
			decls = append(decls, &genai.FunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJsonSchema: t.Parameters})
		}
		cfg.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
	}
	names := map[string]string{} // tool call ID -> function name, for the responses
	var contents []*genai.Content
	add := func(role string, parts []*genai.Part) {
		if len(parts) == 0 {
			return
		}
		if n := len(contents); n > 0 && contents[n-1].Role == role {
			contents[n-1].Parts = append(contents[n-1].Parts, parts...)
			return
		}
		contents = append(contents, &genai.Content{Role: role, Parts: parts})
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			if t := messageText(m); t != "" {
				if cfg.SystemInstruction == nil {
					cfg.SystemInstruction = &genai.Content{}
				}
				cfg.SystemInstruction.Parts = append(cfg.SystemInstruction.Parts, &genai.Part{Text: t})
			}
		case RoleAssistant:
			var parts []*genai.Part
			if t := messageText(m); t != "" {
				parts = append(parts, &genai.Part{Text: t})
			}
			for _, tc := range m.ToolCalls {
				var args map[string]any
				_ = json.Unmarshal([]byte(tc.Arguments), &args) // a malformed call goes back without arguments
				names[tc.ID] = tc.Name
				parts = append(parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: tc.ID, Name: tc.Name, Args: args}, ThoughtSignature: tc.Signature})
			}
			add(genai.RoleModel, parts)
		case RoleTool:
			add(genai.RoleUser, []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
				ID: m.ToolCallID, Name: names[m.ToolCallID], Response: map[string]any{"output": messageText(m)}}}})
		default:
			parts, err := geminiUserParts(m)
			if err != nil {
				return nil, nil, fmt.Errorf("messages[%d]: %w", i, err)
			}
			add(genai.RoleUser, parts)
		}
	}
	return contents, cfg, nil
}

func geminiUserParts(m Message) ([]*genai.Part, error) {
	if len(m.Parts) == 0 {
		if m.Content == "" {
			return nil, nil
		}
		return []*genai.Part{{Text: m.Content}}, nil
	}
	var parts []*genai.Part
	for _, p := range m.Parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				parts = append(parts, &genai.Part{Text: p.Text})
			}
		case "image_url", "file":
			u := p.ImageURL
			if p.Type == "file" {
				u = p.FileData
			}
			mt, data, ok := parseDataURL(u)
			if !ok {
				parts = append(parts, &genai.Part{FileData: &genai.FileData{FileURI: u}})
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(data)
			if err != nil {
				return nil, fmt.Errorf("a %s part's data: URL is not valid base64: %v", p.Type, err)
			}
			parts = append(parts, &genai.Part{InlineData: &genai.Blob{MIMEType: mt, Data: raw}})
		}
	}
	return parts, nil
}

// idPrefix makes the IDs of an answer's unnamed calls unique across the
// answers of a turn (call_<random>_<n>), which the transcript pairs by ID.
func (g *geminiAnswer) idPrefix() string {
	if g.prefix == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		g.prefix = hex.EncodeToString(b[:])
	}
	return g.prefix
}
