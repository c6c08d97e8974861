package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/agenttask/agenttask/contract"
)

// The three CEL examples of docs/content.md#the-variables, verbatim.
const (
	seedSize  = `size(i) > 0 && i[0].sizeBytes < 15000000`
	seedImage = `size(i) > 0 && i[0].mimeType.startsWith("image/")`
	seedFile  = `size(i) > 0 && has(i[0].file)`
)

func ptr[T any](v T) *T { return &v }

func filePart(mime, file string, size int64) contract.ContentPart {
	return contract.ContentPart{MimeType: mime, File: &file, SizeBytes: &size}
}

func mustCondition(t *testing.T, expr string, parts []contract.ContentPart, ctx Context) bool {
	t.Helper()
	ok, err := Condition(expr, parts, ctx)
	if err != nil {
		t.Fatalf("Condition(%q): unexpected error %v", expr, err)
	}
	return ok
}

func TestSeedExamples(t *testing.T) {
	cases := []struct {
		name  string
		expr  string
		parts []contract.ContentPart
		want  bool
	}{
		{"size just under 15 MB", seedSize, []contract.ContentPart{filePart("video/mp4", "task://a.mp4", 14_999_999)}, true},
		{"size at 15 MB", seedSize, []contract.ContentPart{filePart("video/mp4", "task://a.mp4", 15_000_000)}, false},
		{"size of a text part", seedSize, []contract.ContentPart{contract.TextPart("hi")}, true},
		{"size, empty input", seedSize, nil, false},
		{"image/png", seedImage, []contract.ContentPart{filePart("image/png", "task://a.png", 10)}, true},
		{"text/plain", seedImage, []contract.ContentPart{contract.TextPart("hi")}, false},
		{"image, empty input", seedImage, []contract.ContentPart{}, false},
		{"file part", seedFile, []contract.ContentPart{filePart("application/pdf", "task://r.pdf", 10)}, true},
		{"text file reference", seedFile, []contract.ContentPart{{MimeType: "text/plain", File: ptr("task://large_prompt.txt"), SizeBytes: ptr(int64(56000))}}, true},
		{"text part", seedFile, []contract.ContentPart{contract.TextPart("hi")}, false},
		{"file, empty input", seedFile, nil, false},
		{"only the first part counts", seedFile, []contract.ContentPart{contract.TextPart("see attached"), filePart("application/pdf", "task://r.pdf", 10)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := CheckExpression("agent.capabilities[0].condition", c.expr); err != nil {
				t.Fatalf("CheckExpression: %v", err)
			}
			if got := mustCondition(t, c.expr, c.parts, Context{}); got != c.want {
				t.Fatalf("Condition = %v, want %v", got, c.want)
			}
			gs := []Guardrail{{Name: "seed", Expression: c.expr, Message: "refused by the seed example"}}
			err := EvaluateGuardrails(gs, c.parts, Context{})
			if c.want && err != nil {
				t.Fatalf("guardrail refused a passing input: %v", err)
			}
			if !c.want {
				if contract.TypeOf(err) != contract.ErrGuardrail {
					t.Fatalf("guardrail error = %v, want type %s", err, contract.ErrGuardrail)
				}
				if want := "refused by the seed example (guardrail seed)"; err.(*contract.Error).Message != want {
					t.Fatalf("message = %q, want %q", err.(*contract.Error).Message, want)
				}
			}
		})
	}
}

func TestMissingFieldIsAnError(t *testing.T) {
	// A part without sizeBytes has no such key: the guardrail refuses with the
	// error, the condition is false with it.
	parts := []contract.ContentPart{{MimeType: "image/png", File: ptr("task://a.png")}}
	ok, err := Condition(seedSize, parts, Context{})
	if ok || err == nil || !strings.Contains(err.Error(), "sizeBytes") {
		t.Fatalf("Condition = %v, %v; want false with a no-such-key error", ok, err)
	}
}

func ticketContext() Context {
	return Context{
		Input: []contract.TaskIO{
			{
				Message:     []contract.ContentPart{contract.TextPart("my printer is on fire")},
				ReceivedAt:  "2024-05-01T10:00:00.000000Z",
				CommittedAt: "2024-05-01T10:00:01.000000Z",
				Values: map[string]json.RawMessage{
					"ticket_id": json.RawMessage(`7`),
					"priority":  json.RawMessage(`"high"`),
					"score":     json.RawMessage(`5.5`),
					"tags":      json.RawMessage(`["printer", "fire"]`),
					"owner":     json.RawMessage(`{"name": "ada", "id": 12}`),
				},
			},
			{Message: []contract.ContentPart{contract.TextPart("still burning")}, ReceivedAt: "2024-05-01T10:05:00.000000Z"},
		},
	}
}

func TestContext(t *testing.T) {
	ctx := ticketContext()
	cases := []struct {
		expr string
		ctx  Context
		want bool
	}{
		{`context.input[0].ticket_id == 7`, ctx, true},
		{`context.input[0].ticket_id == 8`, ctx, false},
		{`context.input[0].ticket_id > 6 && context.input[0].priority == "high"`, ctx, true},
		{`context.input[0].score > 5`, ctx, true}, // double against int
		{`"fire" in context.input[0].tags`, ctx, true},
		{`context.input[0].owner.name == "ada" && context.input[0].owner.id == 12`, ctx, true},
		{`context.input[0].message[0].text == "my printer is on fire"`, ctx, true},
		{`context.input[0].message[0].mimeType == "text/plain"`, ctx, true},
		{`context.input[0].committed_at.startsWith("2024-05-01")`, ctx, true},
		{`has(context.input[1].received_at) && !has(context.input[1].committed_at)`, ctx, true},
		{`!has(context.input[1].ticket_id)`, ctx, true},
		{`size(context.input) == 2`, ctx, true},
		{`size(context.output) == 0`, ctx, true},
		{`size(context.output) == 0`, Context{}, true},
		{`context.input.exists(x, has(x.ticket_id) && x.ticket_id == 7)`, ctx, true},
		{`size(context.input) == 0 || context.input[size(context.input) - 1].message[0].text == "still burning"`, ctx, true},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			if err := CheckExpression("x", c.expr); err != nil {
				t.Fatal(err)
			}
			if got := mustCondition(t, c.expr, nil, c.ctx); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestEvaluationErrors(t *testing.T) {
	const expr = `context.input[0].ticket_id == 7`
	ok, err := Condition(expr, nil, Context{})
	if ok || err == nil {
		t.Fatalf("Condition on an empty context = %v, %v; want false with an error", ok, err)
	}
	if !strings.Contains(err.Error(), "index out of bounds") && !strings.Contains(err.Error(), "invalid_argument") {
		t.Logf("note: error text %q", err)
	}
	gs := []Guardrail{
		{Name: "has-text", Expression: `size(i) > 0`, Message: "send something"},
		{Name: "ticket", Expression: expr, Message: "only ticket 7 may be discussed"},
	}
	gerr := EvaluateGuardrails(gs, []contract.ContentPart{contract.TextPart("hi")}, Context{})
	var se *contract.Error
	if !errors.As(gerr, &se) || se.Type != contract.ErrGuardrail {
		t.Fatalf("EvaluateGuardrails = %v, want a %s error", gerr, contract.ErrGuardrail)
	}
	want := "only ticket 7 may be discussed (guardrail ticket); evaluation error: " + err.Error()
	if se.Message != want {
		t.Fatalf("message = %q\nwant      %q", se.Message, want)
	}

	// The first failing guardrail wins; later ones are not consulted.
	gerr = EvaluateGuardrails(gs, nil, Context{})
	if gerr == nil || gerr.(*contract.Error).Message != "send something (guardrail has-text)" {
		t.Fatalf("EvaluateGuardrails = %v", gerr)
	}
	if err := EvaluateGuardrails(gs, []contract.ContentPart{contract.TextPart("hi")}, ticketContext()); err != nil {
		t.Fatalf("all guardrails hold, got %v", err)
	}
	if err := EvaluateGuardrails(nil, nil, Context{}); err != nil {
		t.Fatalf("no guardrails: %v", err)
	}

	// A dyn expression that turns out not to be a bool is an evaluation error.
	ok, err = Condition(`context.input[0].priority`, nil, ticketContext())
	if ok || err == nil || !strings.Contains(err.Error(), "not bool") {
		t.Fatalf("non-bool result: %v, %v", ok, err)
	}
	// A dyn bool is fine.
	if !mustCondition(t, `i[0].metadata.flagged`, []contract.ContentPart{{MimeType: "text/plain", Text: ptr("x"), Metadata: json.RawMessage(`{"flagged": true}`)}}, Context{}) {
		t.Fatal("dyn bool: want true")
	}
	// An expression that was never checked and does not compile refuses.
	gerr = EvaluateGuardrails([]Guardrail{{Name: "bad", Expression: "1 +", Message: "m"}}, nil, Context{})
	if gerr == nil || !strings.Contains(gerr.Error(), "evaluation error: the expression does not compile") {
		t.Fatalf("uncompilable guardrail: %v", gerr)
	}
}

func TestCheckRefusals(t *testing.T) {
	cases := []struct {
		name, expr, want string
	}{
		{"syntax error", `size(i) > `, "Syntax error"},
		{"non-bool result", `1 + 1`, "returns int; it must return bool"},
		{"unknown variable", `foo > 1`, "undeclared reference to 'foo'"},
		{"too long", `true || ` + strings.Repeat(`i[0].text == "x" || `, 250) + `false`, "more than the 4096 allowed"},
		{"empty", `  `, "is empty"},
		{"long syntax error", strings.Repeat("i + ", 900) + "(", "Syntax error"},
		{"list result", `i`, "must return bool"},
		{"message construction", `size(google.protobuf.Struct{fields: {"a": 1}}) == 1`, "constructing a message"},
		{"bad constant regex", `i[0].text.matches("(")`, "missing closing )"},
		{"wrong argument type", `i[0].sizeBytes.startsWith(1)`, "found no matching overload"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const path = "agent.guardrails[1].expression"
			err := CheckExpression(path, c.expr)
			var se *contract.Error
			if !errors.As(err, &se) || se.Type != contract.ErrInvalidInput {
				t.Fatalf("CheckExpression = %v, want INVALID_INPUT", err)
			}
			if !strings.HasPrefix(se.Message, path+": ") || !strings.Contains(se.Message, c.want) {
				t.Fatalf("message = %q, want the path and %q", se.Message, c.want)
			}
			if len(se.Message) > 2100 {
				t.Fatalf("message is %d bytes", len(se.Message))
			}
			if _, err := UsesContext(c.expr); contract.TypeOf(err) != contract.ErrInvalidInput {
				t.Fatalf("UsesContext = %v, want INVALID_INPUT", err)
			}
		})
	}
}

func TestCheckGuardrails(t *testing.T) {
	ok := Guardrail{Name: "images-only", Expression: seedImage, Message: "send an image"}
	if err := CheckGuardrails("agent.guardrails", []Guardrail{ok, {Name: "small", Expression: seedSize, Message: "too large"}}); err != nil {
		t.Fatal(err)
	}
	if err := CheckGuardrails("agent.guardrails", nil); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		gs   []Guardrail
		want string
	}{
		{"empty name", []Guardrail{{Name: "", Expression: "true", Message: "m"}}, "agent.guardrails[0].name: "},
		{"long name", []Guardrail{{Name: strings.Repeat("n", 64), Expression: "true", Message: "m"}}, "agent.guardrails[0].name: "},
		{"control character", []Guardrail{{Name: "a\nb", Expression: "true", Message: "m"}}, "agent.guardrails[0].name: "},
		{"duplicate", []Guardrail{ok, ok}, `agent.guardrails[1].name: "images-only" is already the name of agent.guardrails[0]`},
		{"empty message", []Guardrail{{Name: "x", Expression: "true", Message: " "}}, "agent.guardrails[0].message: "},
		{"bad expression", []Guardrail{ok, {Name: "x", Expression: "1 + 1", Message: "m"}}, "agent.guardrails[1].expression: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckGuardrails("agent.guardrails", c.gs)
			if contract.TypeOf(err) != contract.ErrInvalidInput || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("CheckGuardrails = %v, want INVALID_INPUT containing %q", err, c.want)
			}
		})
	}
	if err := CheckGuardrails("g", []Guardrail{{Name: strings.Repeat("é", 63), Expression: "true", Message: "m"}}); err != nil {
		t.Fatalf("63 characters: %v", err)
	}
	// The JSON shape.
	var g []Guardrail
	if err := json.Unmarshal([]byte(`[{"name":"n","expression":"true","message":"m"}]`), &g); err != nil || g[0] != (Guardrail{"n", "true", "m"}) {
		t.Fatalf("decode: %v %+v", err, g)
	}
}

func TestUsesContext(t *testing.T) {
	cases := map[string]bool{
		seedSize:                               false,
		seedImage:                              false,
		`context.input[0].ticket_id == 7`:      true,
		`size(context.output) == 0`:            true,
		`has(context.input)`:                   true,
		`i.exists(context, has(context.file))`: false, // shadowed
		`i.exists(context, has(context.file)) && size(context.input) > 0`: true,
		`[context].size() == 1`:      true,
		`{"k": context}.size() == 1`: true,
		`i.all(p, p.mimeType in context.input.map(x, x.message[0].mimeType))`: true,
	}
	for expr, want := range cases {
		got, err := UsesContext(expr)
		if err != nil || got != want {
			t.Errorf("UsesContext(%q) = %v, %v; want %v", expr, got, err, want)
		}
	}
}

// hostile expressions: each is small and type-checks, but would run for a
// long time (or build huge values) without the cost limit.
func hostileExpressions() map[string]string {
	nums := make([]string, 150)
	for k := range nums {
		nums[k] = fmt.Sprint(k % 10)
	}
	list := "[" + strings.Join(nums, ",") + "]"
	long := `"` + strings.Repeat("ab", 200) + `"`
	return map[string]string{
		"nested comprehensions": list + `.all(x, ` + list + `.all(y, ` + list + `.all(z, x + y + z >= 0)))`,
		"constant loop body":    list + `.all(x, ` + list + `.all(y, ` + list + `.all(z, true)))`,
		"list blow-up":          list + `.map(x, ` + list + `.map(y, ` + list + `)).size() > 0`,
		"string building":       list + `.map(x, ` + list + `.map(y, ` + long + ` + ` + long + ` + ` + long + `)).size() > 0`,
		"regex":                 list + `.exists(x, ` + list + `.exists(y, (` + long + ` + ` + long + `).matches("(a|b)*c")))`,
		"deep equality":         list + `.all(x, ` + list + `.all(y, ` + list + `.map(z, ` + list + `) == ` + list + `.map(z, ` + list + `)))`,
		"context scan":          `context.input.all(x, context.input.all(y, x.ticket_id != y.ticket_id || x == y))`,
		"map literal loop":      list + `.all(x, ` + list + `.all(y, {"a": x, "b": y, "c": ` + list + `}.all(k, k != "d")))`,
	}
}

func TestHostileExpressionsStopAtTheCostLimit(t *testing.T) {
	for name, expr := range hostileExpressions() {
		t.Run(name, func(t *testing.T) {
			if err := CheckExpression("x", expr); err != nil {
				t.Fatalf("the hostile expression should type-check: %v", err)
			}
			ctx := longContext(3000)
			ok, err := Condition(expr, nil, ctx) // the cost limit stops it, not a clock
			if ok || err == nil || !strings.Contains(err.Error(), "cost limit") {
				t.Fatalf("Condition = %v, %v; want false with a cost-limit error", ok, err)
			}
			gerr := EvaluateGuardrails([]Guardrail{{Name: "h", Expression: expr, Message: "no"}}, nil, ctx)
			if gerr == nil || !strings.Contains(gerr.Error(), "cost limit") {
				t.Fatalf("guardrail: %v", gerr)
			}
		})
	}
}

func TestLongContextIsCheap(t *testing.T) {
	ctx := longContext(20_000)
	// Cheap means within the evaluation's cost limit, which fails the
	// condition otherwise.
	if !mustCondition(t, `context.input[0].ticket_id == 0 && size(context.input) == 20000`, nil, ctx) {
		t.Fatal("want true")
	}
	// A scan over the whole history fits the budget.
	if !mustCondition(t, `context.input.exists(x, x.ticket_id == 19999)`, nil, ctx) {
		t.Fatal("want true")
	}
}

func TestDeterminism(t *testing.T) {
	parts := []contract.ContentPart{{
		MimeType: "image/png", File: ptr("task://a.png"), SizeBytes: ptr(int64(42)),
		Metadata: json.RawMessage(`{"zeta": 1, "alpha": "x", "mid": [1, 2], "beta": true, "gamma": null}`),
	}}
	ctx := ticketContext()
	exprs := []string{
		seedSize, seedImage, seedFile,
		// Map iteration order: keys come out sorted, every time.
		`i[0].metadata.map(k, k) == ["alpha", "beta", "gamma", "mid", "zeta"]`,
		`{"q": 1, "b": 2, "x": 3, "a": 4}.map(k, k) == ["a", "b", "q", "x"]`,
		`context.input[0].map(k, k) == ["committed_at", "message", "owner", "priority", "received_at", "score", "tags", "ticket_id"]`,
		// Errors that depend on which key is visited first.
		`i[0].metadata.all(k, i[0].metadata[k] > 0)`,
		`{"q": 1, "b": "2", "x": [], "a": 4}.exists(k, {"q": 1, "b": "2", "x": [], "a": 4}[k] > 3)`,
		`context.input[0].all(k, context.input[0][k] == 7)`,
		`context.input[1].ticket_id == 7`,
		hostileExpressions()["nested comprehensions"],
	}
	for _, expr := range exprs {
		firstOK, firstErr := Condition(expr, parts, ctx)
		firstG := EvaluateGuardrails([]Guardrail{{Name: "d", Expression: expr, Message: "m"}}, parts, ctx)
		for n := 0; n < 100; n++ {
			ok, err := Condition(expr, parts, ctx)
			if ok != firstOK || fmt.Sprint(err) != fmt.Sprint(firstErr) {
				t.Fatalf("%s: run %d gave %v, %v; first %v, %v", expr, n, ok, err, firstOK, firstErr)
			}
			g := EvaluateGuardrails([]Guardrail{{Name: "d", Expression: expr, Message: "m"}}, parts, ctx)
			if fmt.Sprint(g) != fmt.Sprint(firstG) {
				t.Fatalf("%s: guardrail run %d gave %v; first %v", expr, n, g, firstG)
			}
			if strings.HasPrefix(expr, "[0,1,2") && n == 9 {
				break // the hostile one runs to its limit each time: ten runs prove the point
			}
		}
		t.Logf("%.60s: %v %v", expr, firstOK, firstErr)
	}
	for _, expr := range exprs[3:6] {
		if !mustCondition(t, expr, parts, ctx) {
			t.Errorf("%s: want true", expr)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	done := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for n := 0; n < 50; n++ {
				ok, err := Condition(`context.input[0].ticket_id == 7 && i[0].metadata.map(k, k)[0] == "a"`,
					[]contract.ContentPart{{MimeType: "text/plain", Text: ptr("x"), Metadata: json.RawMessage(`{"b": 1, "a": 2}`)}}, ticketContext())
				if !ok || err != nil {
					done <- fmt.Errorf("got %v, %v", ok, err)
					return
				}
				if ok, err := Condition(`size(context.output) == 0 && size(i) == 0`, nil, Context{}); !ok || err != nil {
					done <- fmt.Errorf("got %v, %v", ok, err)
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// valuesEqual compares two CEL values deeply, including map key order.
func valuesEqual(t *testing.T, path string, a, b ref.Val) {
	t.Helper()
	if types.Equal(a, b) != types.True || a.Type() != b.Type() {
		t.Fatalf("%s: %v (%T) != %v (%T)", path, a.Value(), a, b.Value(), b)
	}
	switch x := a.(type) {
	case traits.Mapper:
		y := b.(traits.Mapper)
		ia, ib := x.Iterator(), y.Iterator()
		for ia.HasNext() == types.True {
			ka, kb := ia.Next(), ib.Next()
			if ka.Equal(kb) != types.True {
				t.Fatalf("%s: key order %v vs %v", path, ka, kb)
			}
			va, _ := x.Find(ka)
			vb, _ := y.Find(kb)
			valuesEqual(t, fmt.Sprintf("%s.%v", path, ka), va, vb)
		}
	case traits.Lister:
		y := b.(traits.Lister)
		n := int(x.Size().(types.Int))
		for k := 0; k < n; k++ {
			valuesEqual(t, fmt.Sprintf("%s[%d]", path, k), x.Get(types.Int(k)), y.Get(types.Int(k)))
		}
	}
}

// TestValuesMatchJSON pins the direct conversion to the JSON encodings it
// stands for: contract.ContentPart (omitempty) and contract.TaskIO's flat object.
func TestValuesMatchJSON(t *testing.T) {
	parts := []contract.ContentPart{
		contract.TextPart("hello"),
		{MimeType: "text/plain", Text: ptr("")},
		{MimeType: "", File: ptr("task://x")},
		{MimeType: "image/png", File: ptr("task://a.png"), SizeBytes: ptr(int64(0))},
		{MimeType: "text/plain", Text: ptr("bad \xff\xfe utf-8 \xe2\x82"), Metadata: json.RawMessage(`null`)},
		{MimeType: "a", Metadata: json.RawMessage(`{"n": 12345678901234567890, "f": 1.5, "e": 1e3, "neg": -0, "s": "q\"\\u00e9", "l": [true, false, null, {"z": 1, "a": -7}]}`)},
	}
	for k, p := range parts {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jsonValue(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := partValue(p)
		if err != nil {
			t.Fatal(err)
		}
		valuesEqual(t, fmt.Sprintf("part %d", k), got, want)
	}
	ios := append(ticketContext().Input,
		contract.TaskIO{},
		contract.TaskIO{Values: map[string]json.RawMessage{"nil": nil, "message": json.RawMessage(`"ignored"`), "type": json.RawMessage(`1`), "k\xff": json.RawMessage(`" x "`)}},
	)
	for k, io := range ios {
		b, err := json.Marshal(io)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jsonValue(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := taskIOValue(io)
		if err != nil {
			t.Fatal(err)
		}
		valuesEqual(t, fmt.Sprintf("taskio %d", k), got, want)
	}
	// Integral numbers are ints, others doubles.
	for raw, want := range map[string]ref.Val{`7`: types.Int(7), `-12`: types.Int(-12), `7.0`: types.Double(7), `1e2`: types.Double(100), `9223372036854775807`: types.Int(9223372036854775807), `9223372036854775808`: types.Double(9223372036854775808), `"s"`: types.String("s"), `"\u00e9"`: types.String("é")} {
		got, err := jsonValue([]byte(raw))
		if err != nil || got.Equal(want) != types.True || got.Type() != want.Type() {
			t.Errorf("jsonValue(%s) = %v (%T), %v; want %v", raw, got, got, err, want)
		}
	}
	for _, raw := range []string{`007`, `+1`, `"a`, `{`, `1 2`, ``} {
		if _, err := jsonValue([]byte(raw)); err == nil {
			t.Errorf("jsonValue(%q): want an error", raw)
		}
	}
}

func TestBrokenContextEntry(t *testing.T) {
	ctx := Context{Input: []contract.TaskIO{
		{Values: map[string]json.RawMessage{"x": json.RawMessage(`{not json`)}},
		{Values: map[string]json.RawMessage{"x": json.RawMessage(`1`)}},
	}}
	// The broken entry is never converted when not read.
	if !mustCondition(t, `context.input[1].x == 1`, nil, ctx) {
		t.Fatal("want true")
	}
	for _, expr := range []string{`context.input[0].x == 1`, `context.input[0].all(k, true)`, `size(context.input[0]) > 0`} {
		ok, err := Condition(expr, nil, ctx)
		if ok || err == nil || !strings.Contains(err.Error(), "context.input[0]") {
			t.Errorf("%s: %v, %v; want false with an error naming the entry", expr, ok, err)
		}
	}
}
