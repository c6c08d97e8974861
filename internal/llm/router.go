package llm

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// DefaultRequestTimeout bounds one HTTP attempt when RouterOptions leaves it 0.
// Long answers from slow models can take minutes; the caller's context can
// always cut it shorter.
const DefaultRequestTimeout = 5 * time.Minute

// RouterOptions configures a Router.
type RouterOptions struct {
	// Endpoints maps provider name -> endpoint.
	Endpoints map[string]Endpoint
	// EnableDemo serves provider "demo" with the offline demo model.
	EnableDemo bool
	// HTTPClient defaults to NewHTTPClient(): no overall timeout (the
	// context governs), and an idle pool sized for concurrent calls. Either
	// way, a redirect to another origin drops the request's headers that
	// may carry a provider key (dropKeysOnRedirect).
	HTTPClient *http.Client
	// RequestTimeout bounds each HTTP attempt; DefaultRequestTimeout when 0.
	RequestTimeout time.Duration
	// DefaultMaxTokens, when set, gives the max_tokens of a request to a
	// protocol that requires one (anthropic) and whose request leaves
	// MaxTokens 0, by "provider/model": RouterOptionsFromEnv makes it the
	// catalogue's maxTokens; 0 or unset means DefaultAnthropicMaxTokens.
	DefaultMaxTokens func(model string) int
}

// providerClient is one provider's client, whatever its protocol.
type providerClient interface {
	complete(ctx context.Context, model string, req Request) (Response, error)
}

// Router sends each request to the endpoint named by its model's provider
// prefix. It is safe for concurrent use.
type Router struct {
	clients map[string]providerClient
	demo    bool
}

var _ Client = (*Router)(nil)

// NewRouter builds a Router. It copies the options, so later changes to the
// Endpoints map do not affect it.
func NewRouter(o RouterOptions) *Router {
	hc := o.HTTPClient
	if hc == nil {
		hc = NewHTTPClient()
	} else {
		hc = withoutKeysOnRedirect(hc) // a caller's client too: no key follows a redirect to another host
	}
	timeout := o.RequestTimeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	r := &Router{clients: make(map[string]providerClient, len(o.Endpoints)), demo: o.EnableDemo}
	for name, ep := range o.Endpoints {
		ep.BaseURL = strings.TrimRight(strings.TrimSpace(ep.BaseURL), "/")
		switch ep.Protocol {
		case ProtocolAnthropic:
			r.clients[name] = newAnthropicClient(name, ep, hc, timeout, o.DefaultMaxTokens)
		case ProtocolGoogle:
			r.clients[name] = newGeminiClient(name, ep, hc, timeout)
		default: // checked by RouterOptionsFromEnv; "" is openai
			r.clients[name] = &endpointClient{provider: name, endpoint: ep, http: hc, timeout: timeout}
		}
	}
	return r
}

// Providers lists the providers this router serves, sorted.
func (r *Router) Providers() []string {
	out := make([]string, 0, len(r.clients)+1)
	for name := range r.clients {
		out = append(out, name)
	}
	if _, ok := r.clients[DemoProvider]; r.demo && !ok {
		out = append(out, DemoProvider)
	}
	sort.Strings(out)
	return out
}

// Complete routes req by the provider prefix of req.Model and makes one attempt.
// req goes on whole, so a set OnText streams from endpoints and the demo alike.
func (r *Router) Complete(ctx context.Context, req Request) (Response, error) {
	provider, name, ok := splitModel(req.Model)
	if !ok {
		return Response{}, &Error{Message: fmt.Sprintf(
			"llm: model %q must be \"provider/name\" (e.g. \"openai/gpt-4o-mini\"); configured providers: %s",
			req.Model, r.providerList())}
	}
	if len(req.Messages) == 0 {
		return Response{}, &Error{Message: fmt.Sprintf("llm: request for model %q has no messages", req.Model)}
	}
	// A configured endpoint wins over the demo model, even one named "demo".
	if c, ok := r.clients[provider]; ok {
		return c.complete(ctx, name, req)
	}
	if provider == DemoProvider && r.demo {
		return demoComplete(ctx, name, req)
	}
	return Response{}, r.unknownProvider(provider, req.Model)
}

// unknownProvider is retryable: a worker that serves the provider may come
// up, or this one may be reconfigured, while the task waits.
func (r *Router) unknownProvider(provider, model string) *Error {
	if provider == DemoProvider {
		return &Error{Retryable: true, Message: fmt.Sprintf(
			"llm: the offline demo model (%q) is disabled because a real endpoint is configured; use a model of a configured provider: %s",
			model, r.providerList())}
	}
	return &Error{Retryable: true, Message: fmt.Sprintf(
		"llm: no endpoint configured for provider %q (model %q); configured providers: %s. "+
			"To configure it, set %s for provider \"openai\", %s for \"anthropic\" or %s for \"google\" (each with an optional *_BASE_URL), "+
			"or add it to %s, e.g. %s='{%q:{\"baseURL\":\"https://host/v1\",\"apiKeyEnv\":\"%s\",\"protocol\":\"openai\"}}' (protocol openai, anthropic or google)",
		provider, model, r.providerList(), EnvOpenAIAPIKey, EnvAnthropicAPIKey, EnvGeminiAPIKey, EnvModelProviders, EnvModelProviders,
		provider, envKeyName(provider))}
}

func (r *Router) providerList() string {
	p := r.Providers()
	if len(p) == 0 {
		return "(none)"
	}
	return strings.Join(p, ", ")
}

// splitModel splits "provider/name" at the first slash, so names may contain
// slashes themselves ("openrouter/meta-llama/llama-3-8b").
func splitModel(model string) (provider, name string, ok bool) {
	provider, name, ok = strings.Cut(strings.TrimSpace(model), "/")
	if !ok || provider == "" || name == "" {
		return "", "", false
	}
	return provider, name, true
}

// envKeyName suggests an environment variable name for a provider's key.
func envKeyName(provider string) string {
	up := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		default:
			return '_'
		}
	}, provider)
	return up + "_API_KEY"
}
