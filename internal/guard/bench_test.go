package guard

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agenttask/agenttask/contract"
)

func longContext(n int) Context {
	var ctx Context
	for k := 0; k < n; k++ {
		ctx.Input = append(ctx.Input, contract.TaskIO{
			Message:     []contract.ContentPart{contract.TextPart("please look at ticket " + fmt.Sprint(k))},
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
	parts := []contract.ContentPart{contract.TextPart("hello")}
	for b.Loop() {
		Condition(`size(i) > 0 && i[0].mimeType.startsWith("image/")`, parts, Context{})
	}
}

// TestBudgetHeadroom pins what typical expressions cost, so a change to the
// meter that would refuse realistic expressions shows up here.
func TestBudgetHeadroom(t *testing.T) {
	ctx := longContext(10_000)
	parts := []contract.ContentPart{contract.TextPart("hello")}
	cases := []struct {
		expr string
		max  uint64
	}{
		{seedSize, 50},
		{seedImage, 50},
		{seedFile, 50},
		{`context.input[0].ticket_id == 7`, 50},
		// Scans over a 10,000-entry history fit with room to spare.
		{`context.input.exists(x, x.ticket_id == -1)`, CostLimit / 4},
		{`context.input.exists(x, x.message[0].text.contains("zzz"))`, CostLimit / 4},
		{`context.input.filter(x, x.ticket_id % 2 == 0).size() > 0`, CostLimit / 3},
		{`context.input.map(x, x.ticket_id).exists(y, y == -1)`, CostLimit / 2},
	}
	for _, c := range cases {
		_, cost, err := newActivation(parts, ctx).run(c.expr)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
		}
		t.Logf("%-60s %7d units", c.expr, cost)
		if cost > c.max {
			t.Errorf("%s: %d units, want at most %d", c.expr, cost, c.max)
		}
	}
}
