// Package catalog is the model catalogue of the Tasks API: which models a
// task may name, how many tokens each can produce, and what a call costs.
//
// Costs are in the runtime's own units per token, used to budget and meter
// runs; they are not a vendor's price list, even where the numbers look like
// one. Prices are exact decimals (see Price) so that metering never drifts.
package catalog

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
)

// EnvCatalog names the environment variable holding the path of a catalogue
// file; when it is unset the built-in catalogue is used.
const EnvCatalog = "MODEL_CATALOG"

// Model is one catalogue entry.
type Model struct {
	// Name is "provider/model": two non-empty parts of lowercase letters,
	// digits, '.', '-', '_' and ':', e.g. "openai/gpt-4o-mini".
	Name string `json:"name"`
	// MaxTokens is the most output tokens one call can produce (≥ 1).
	MaxTokens int `json:"maxTokens"`
	// Reasoning marks models that spend output tokens on hidden reasoning.
	Reasoning           bool  `json:"reasoning"`
	InputUnitsPerToken  Price `json:"inputUnitsPerToken"`
	OutputUnitsPerToken Price `json:"outputUnitsPerToken"`
	// CachedInputUnitsPerToken prices input tokens read from the provider's
	// prompt cache, CacheWriteUnitsPerToken those written to it; nil
	// (absent) prices them as input.
	CachedInputUnitsPerToken *Price `json:"cachedInputUnitsPerToken,omitempty"`
	CacheWriteUnitsPerToken  *Price `json:"cacheWriteUnitsPerToken,omitempty"`
}

var namePattern = regexp.MustCompile(`^[a-z0-9._:-]+/[a-z0-9._:-]+$`)

// validate checks what the JSON types do not; errors start with the field.
func (m Model) validate() error {
	if !namePattern.MatchString(m.Name) {
		return fmt.Errorf("name: %q is not provider/model (lowercase letters, digits, '.', '-', '_', ':')", m.Name)
	}
	if m.MaxTokens < 1 {
		return fmt.Errorf("maxTokens: must be at least 1, got %d", m.MaxTokens)
	}
	return nil // prices were checked when decoded
}

// Catalog is an immutable set of models, safe for concurrent use.
type Catalog struct {
	models map[string]Model
}

// Builtin returns the catalogue used when no file is configured. test/echo
// has non-zero prices so tests can check metering; demo/offline is free.
func Builtin() *Catalog {
	return &Catalog{models: index([]Model{
		{Name: "demo/offline", MaxTokens: 4096, InputUnitsPerToken: mustPrice("0"), OutputUnitsPerToken: mustPrice("0")},
		{Name: "test/echo", MaxTokens: 4096, InputUnitsPerToken: mustPrice("0.001"), OutputUnitsPerToken: mustPrice("0.002")},
		// The test model on Anthropic's and Gemini's protocols, with cache prices so tests meter them.
		{Name: "anthropic/test-echo", MaxTokens: 4096, InputUnitsPerToken: mustPrice("0.01"), OutputUnitsPerToken: mustPrice("0.02"),
			CachedInputUnitsPerToken: pricePtr("0.001"), CacheWriteUnitsPerToken: pricePtr("0.0125")},
		{Name: "google/test-echo", MaxTokens: 4096, InputUnitsPerToken: mustPrice("0.01"), OutputUnitsPerToken: mustPrice("0.02"),
			CachedInputUnitsPerToken: pricePtr("0.0025")},
		{Name: "anthropic/claude-sonnet-4-5", MaxTokens: 64000, Reasoning: true, InputUnitsPerToken: mustPrice("0.003"), OutputUnitsPerToken: mustPrice("0.015"),
			CachedInputUnitsPerToken: pricePtr("0.0003"), CacheWriteUnitsPerToken: pricePtr("0.00375")},
		{Name: "anthropic/claude-haiku-4-5", MaxTokens: 64000, Reasoning: true, InputUnitsPerToken: mustPrice("0.001"), OutputUnitsPerToken: mustPrice("0.005"),
			CachedInputUnitsPerToken: pricePtr("0.0001"), CacheWriteUnitsPerToken: pricePtr("0.00125")},
		{Name: "google/gemini-2.5-flash", MaxTokens: 65536, Reasoning: true, InputUnitsPerToken: mustPrice("0.0003"), OutputUnitsPerToken: mustPrice("0.0025"),
			CachedInputUnitsPerToken: pricePtr("0.000075")},
		{Name: "openai/gpt-4o-mini", MaxTokens: 16384, InputUnitsPerToken: mustPrice("0.00015"), OutputUnitsPerToken: mustPrice("0.0006")},
		{Name: "openai/gpt-4o", MaxTokens: 16384, InputUnitsPerToken: mustPrice("0.0025"), OutputUnitsPerToken: mustPrice("0.01")},
		{Name: "openai/o3-mini", MaxTokens: 100000, Reasoning: true, InputUnitsPerToken: mustPrice("0.0011"), OutputUnitsPerToken: mustPrice("0.0044")},
	})}
}

func index(models []Model) map[string]Model {
	m := make(map[string]Model, len(models))
	for _, x := range models {
		m[x.Name] = x
	}
	return m
}

// Parse reads a catalogue file: {"models": [Model, ...]}. Every field but
// "reasoning" and the two cache prices is required, unknown fields and duplicate names are refused,
// and errors name the entry and field, e.g. "models[2].maxTokens: ...".
func Parse(data []byte) (*Catalog, error) {
	var raws []json.RawMessage
	if err := decodeFields("", data, map[string]any{"models": &raws}); err != nil {
		return nil, err
	}
	if len(raws) == 0 {
		return nil, errors.New("models: must list at least one model")
	}
	models := make(map[string]Model, len(raws))
	for i, raw := range raws {
		path := fmt.Sprintf("models[%d]", i)
		var m Model
		err := decodeFields(path, raw, map[string]any{
			"name":                     &m.Name,
			"maxTokens":                &m.MaxTokens,
			"reasoning":                &m.Reasoning,
			"inputUnitsPerToken":       &m.InputUnitsPerToken,
			"outputUnitsPerToken":      &m.OutputUnitsPerToken,
			"cachedInputUnitsPerToken": &m.CachedInputUnitsPerToken,
			"cacheWriteUnitsPerToken":  &m.CacheWriteUnitsPerToken,
		}, "reasoning", "cachedInputUnitsPerToken", "cacheWriteUnitsPerToken")
		if err != nil {
			return nil, err
		}
		if err := m.validate(); err != nil {
			return nil, fmt.Errorf("%s.%w", path, err)
		}
		if _, dup := models[m.Name]; dup {
			return nil, fmt.Errorf("%s.name: duplicate model %q", path, m.Name)
		}
		models[m.Name] = m
	}
	return &Catalog{models: models}, nil
}

// decodeFields decodes the JSON object data into the targets named by its
// keys, refusing unknown and missing (unless optional) keys. It stands in for
// json.Decoder.DisallowUnknownFields, whose errors give no entry index, which
// drops the error text of Price.UnmarshalJSON's field, and which matches keys
// case-insensitively.
func decodeFields(path string, data []byte, fields map[string]any, optional ...string) error {
	at := func(key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
		where := path
		if where == "" {
			where = "catalog"
		}
		if err == nil {
			err = errors.New("got null")
		}
		return fmt.Errorf("%s: must be a JSON object: %w", where, err)
	}
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		if _, ok := fields[key]; !ok {
			return fmt.Errorf("%s: unknown field", at(key))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(fields)) {
		raw, ok := obj[key]
		if !ok {
			if slices.Contains(optional, key) {
				continue
			}
			return fmt.Errorf("%s: required", at(key))
		}
		if err := json.Unmarshal(raw, fields[key]); err != nil {
			return fmt.Errorf("%s: %w", at(key), err)
		}
	}
	return nil
}

// Load parses the catalogue file at path.
func Load(path string) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("model catalog: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("model catalog %s: %w", path, err)
	}
	return c, nil
}

// FromEnv loads the file named by MODEL_CATALOG, or returns Builtin() when
// that is empty. getenv is usually os.Getenv.
func FromEnv(getenv func(string) string) (*Catalog, error) {
	if path := getenv(EnvCatalog); path != "" {
		return Load(path)
	}
	return Builtin(), nil
}

// Get returns the model called name.
func (c *Catalog) Get(name string) (Model, bool) {
	m, ok := c.models[name]
	return m, ok
}

// List returns all models sorted by name. Models are values whose prices are
// immutable, so the caller may change the result freely.
func (c *Catalog) List() []Model {
	return slices.SortedFunc(maps.Values(c.models), func(a, b Model) int {
		return cmp.Compare(a.Name, b.Name)
	})
}
