package contract

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The compiled-schema cache is bounded by weight: many distinct schemas
// never hold more than compiledCacheWeight, and a schema compiled again
// after eviction behaves the same.
func TestCompiledCacheIsBounded(t *testing.T) {
	pad := strings.Repeat("p", 60_000)
	first := json.RawMessage(fmt.Sprintf(`{"type":"object","description":"%s-0","properties":{"a":{"type":"string"}},"required":["a"]}`, pad))
	c0, err := Compile("s", first)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 200; i++ { // 200 × ~60 KB × 16 = ~190 MB of weight, three times the bound
		raw := json.RawMessage(fmt.Sprintf(`{"type":"object","description":"%s-%d","properties":{"a":{"type":"string"}}}`, pad, i))
		if _, err := Compile("s", raw); err != nil {
			t.Fatal(err)
		}
	}
	compiled.CleanUp()
	if w := compiled.WeightedSize(); w > compiledCacheWeight {
		t.Fatalf("the cache weighs %d, more than %d", w, compiledCacheWeight)
	}
	again, err := Compile("s", first)
	if err != nil {
		t.Fatal(err)
	}
	if vs, vs0 := again.Validate(map[string]json.RawMessage{}), c0.Validate(map[string]json.RawMessage{}); len(vs) != 1 || len(vs0) != 1 {
		t.Fatalf("required a: %v / %v", vs, vs0)
	}
}
