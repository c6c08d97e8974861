package guard

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agenttask/agenttask/schema"
)

func longContext(n int) Context {
	var ctx Context
	for k := 0; k < n; k++ {
		ctx.Input = append(ctx.Input, schema.TaskIO{
			Message:     []schema.ContentPart{schema.TextPart("please look at ticket " + fmt.Sprint(k))},
			ReceivedAt:  "2024-01-01T00:00:00.000000Z",
			CommittedAt: "2024-01-01T00:00:01.000000Z",
			Values:      map[string]json.RawMessage{"ticket_id": json.RawMessage(fmt.Sprint(k))},
		})
	}
	return ctx
}

func BenchmarkTaskIOValue(b *testing.B) {
	ctx := longContext(1)
	for b.Loop() {
		taskIOValue(ctx.Input[0])
	}
}

func BenchmarkConditionPositional(b *testing.B) {
	ctx := longContext(10_000)
	for b.Loop() {
		Condition("context.input[0].ticket_id == 0", nil, ctx)
	}
}

func BenchmarkConditionScan10k(b *testing.B) {
	ctx := longContext(10_000)
	for b.Loop() {
		Condition("context.input.exists(x, x.ticket_id == -1)", nil, ctx)
	}
}

func BenchmarkSeedExample(b *testing.B) {
	parts := []schema.ContentPart{schema.TextPart("hello")}
	for b.Loop() {
		Condition(`size(i) > 0 && i[0].mimeType.startsWith("image/")`, parts, Context{})
	}
}
