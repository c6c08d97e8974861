package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/agenttask/agenttask/internal/catalog"
)

// Environment variables read by RouterOptionsFromEnv.
const (
	// EnvOpenAIAPIKey configures provider "openai".
	EnvOpenAIAPIKey = "OPENAI_API_KEY"
	// EnvOpenAIBaseURL points provider "openai" elsewhere (e.g. a local
	// server); on its own it configures "openai" without a key.
	EnvOpenAIBaseURL = "OPENAI_BASE_URL"
	// EnvAnthropicAPIKey and EnvAnthropicBaseURL configure provider
	// "anthropic" (protocol anthropic) as the OpenAI pair does "openai".
	EnvAnthropicAPIKey  = "ANTHROPIC_API_KEY"
	EnvAnthropicBaseURL = "ANTHROPIC_BASE_URL"
	// EnvGeminiAPIKey and EnvGeminiBaseURL configure provider "google"
	// (protocol google).
	EnvGeminiAPIKey  = "GEMINI_API_KEY"
	EnvGeminiBaseURL = "GEMINI_BASE_URL"
	// EnvModelProviders is a JSON object of further providers:
	// {"groq":{"baseURL":"https://api.groq.com/openai/v1","apiKeyEnv":"GROQ_API_KEY"}}
	// An entry may name its "protocol": "openai" (the default), "anthropic" or "google".
	EnvModelProviders = "AGENT_MODEL_PROVIDERS"
)

// DefaultGeminiBaseURL is used when GEMINI_API_KEY is set without GEMINI_BASE_URL.
const DefaultGeminiBaseURL = "https://generativelanguage.googleapis.com"

// shorthand is a provider configured by a key and base URL variable pair.
type shorthand struct {
	provider, protocol, keyEnv, baseEnv, defaultBase string
}

var shorthands = []shorthand{
	{"openai", "", EnvOpenAIAPIKey, EnvOpenAIBaseURL, DefaultOpenAIBaseURL},
	{"anthropic", ProtocolAnthropic, EnvAnthropicAPIKey, EnvAnthropicBaseURL, DefaultAnthropicBaseURL},
	{"google", ProtocolGoogle, EnvGeminiAPIKey, EnvGeminiBaseURL, DefaultGeminiBaseURL},
}

// DefaultOpenAIBaseURL is used when OPENAI_API_KEY is set without OPENAI_BASE_URL.
const DefaultOpenAIBaseURL = "https://api.openai.com/v1"

// providerConfig is one entry of AGENT_MODEL_PROVIDERS. The key is named by
// variable rather than inlined so secrets stay out of the JSON.
type providerConfig struct {
	BaseURL   string `json:"baseURL"`
	APIKeyEnv string `json:"apiKeyEnv"`
	Protocol  string `json:"protocol"`
}

// RouterOptionsFromEnv builds router options from the environment; getenv is
// os.Getenv in binaries and a map lookup in tests. The offline demo model is
// enabled only when no real endpoint is configured, so it can never answer in
// place of a real model.
func RouterOptionsFromEnv(getenv func(string) string) (RouterOptions, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	o := RouterOptions{Endpoints: map[string]Endpoint{}}

	byShorthand := map[string]shorthand{}
	for _, sh := range shorthands {
		key, base := get(sh.keyEnv), get(sh.baseEnv)
		if key == "" && base == "" {
			continue
		}
		if base == "" {
			base = sh.defaultBase
		}
		if err := checkBaseURL(base); err != nil {
			return RouterOptions{}, fmt.Errorf("%s: %w", sh.baseEnv, err)
		}
		o.Endpoints[sh.provider] = Endpoint{BaseURL: base, APIKey: key, Protocol: sh.protocol}
		byShorthand[sh.provider] = sh
	}

	if raw := get(EnvModelProviders); raw != "" {
		providers, err := parseProviders(raw)
		if err != nil {
			return RouterOptions{}, err
		}
		names := make([]string, 0, len(providers))
		for name := range providers {
			names = append(names, name)
		}
		sort.Strings(names) // deterministic first error
		for _, name := range names {
			pc := providers[name]
			if err := checkProviderName(name); err != nil {
				return RouterOptions{}, fmt.Errorf("%s: %w", EnvModelProviders, err)
			}
			if sh, dup := byShorthand[name]; dup {
				if sh.provider == "openai" {
					return RouterOptions{}, fmt.Errorf("%s: provider %q is already configured by %s/%s; configure it in one place",
						EnvModelProviders, name, sh.keyEnv, sh.baseEnv)
				}
				// An entry for "anthropic" or "google" wins over their newer
				// shorthands (one may name ANTHROPIC_API_KEY as its apiKeyEnv,
				// as configurations written before them do).
				delete(o.Endpoints, name)
			}
			if err := checkBaseURL(pc.BaseURL); err != nil {
				return RouterOptions{}, fmt.Errorf("%s: provider %q: baseURL: %w", EnvModelProviders, name, err)
			}
			protocol, err := checkProtocol(pc.Protocol)
			if err != nil {
				return RouterOptions{}, fmt.Errorf("%s: provider %q: %w", EnvModelProviders, name, err)
			}
			ep := Endpoint{BaseURL: strings.TrimSpace(pc.BaseURL), Protocol: protocol}
			if env := strings.TrimSpace(pc.APIKeyEnv); env != "" {
				// A named but empty key is a misconfiguration that would
				// otherwise surface as a 401 on the first model call.
				if ep.APIKey = get(env); ep.APIKey == "" {
					return RouterOptions{}, fmt.Errorf("%s: provider %q: apiKeyEnv names %s, which is not set", EnvModelProviders, name, env)
				}
			}
			o.Endpoints[name] = ep
		}
	}

	o.EnableDemo = len(o.Endpoints) == 0
	if err := defaultMaxTokens(&o, getenv); err != nil {
		return RouterOptions{}, err
	}
	return o, nil
}

// defaultMaxTokens takes the max_tokens a protocol that requires one sends
// by default from the model catalogue (MODEL_CATALOG or the built-in one),
// read only when such a provider is configured.
func defaultMaxTokens(o *RouterOptions, getenv func(string) string) error {
	needed := false
	for _, ep := range o.Endpoints {
		needed = needed || ep.Protocol == ProtocolAnthropic
	}
	if !needed {
		return nil
	}
	cat, err := catalog.FromEnv(getenv)
	if err != nil {
		return fmt.Errorf("the Anthropic protocol's default max_tokens comes from the model catalogue: %w (fix %s or unset it)", err, catalog.EnvCatalog)
	}
	o.DefaultMaxTokens = func(model string) int {
		m, _ := cat.Get(model)
		return m.MaxTokens // 0 for a model the catalogue lacks: DefaultAnthropicMaxTokens
	}
	return nil
}

func parseProviders(raw string) (map[string]providerConfig, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields() // catch typos such as "apiKey" or "url"
	var providers map[string]providerConfig
	if err := dec.Decode(&providers); err != nil {
		return nil, fmt.Errorf(`%s must be a JSON object like {"groq":{"baseURL":"https://api.groq.com/openai/v1","apiKeyEnv":"GROQ_API_KEY"}}: %w`,
			EnvModelProviders, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: unexpected data after the JSON object", EnvModelProviders)
	}
	return providers, nil
}

// checkProtocol refuses unknown protocols; openai is kept as "", the
// Endpoint's default.
func checkProtocol(p string) (string, error) {
	switch p = strings.ToLower(strings.TrimSpace(p)); p {
	case "", ProtocolOpenAI:
		return "", nil
	case ProtocolAnthropic, ProtocolGoogle:
		return p, nil
	}
	return "", fmt.Errorf("protocol %q is not one of %q (OpenAI-compatible chat completions, the default), %q (Anthropic Messages API) or %q (Gemini API)",
		p, ProtocolOpenAI, ProtocolAnthropic, ProtocolGoogle)
}

func checkProviderName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("provider name must not be empty")
	case name == DemoProvider:
		return fmt.Errorf("provider name %q is reserved for the offline demo model", DemoProvider)
	case strings.ContainsAny(name, "/ \t\r\n"):
		return fmt.Errorf("provider name %q must not contain '/' or spaces (models are addressed as provider/name)", name)
	}
	return nil
}

func checkBaseURL(s string) error {
	s = strings.TrimSpace(s)
	if s == "" {
		return fmt.Errorf("base URL is required")
	}
	u, err := url.Parse(s)
	if err != nil {
		// Not %w of the *url.Error: its text repeats the URL, which may carry credentials.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("invalid base URL: %v", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("base URL %q must be an absolute http(s) URL like https://api.openai.com/v1", u.Redacted())
	}
	return nil
}
