package guard

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/agenttask/agenttask/contract"
)

func TestApprovalNeeded(t *testing.T) {
	vars := map[string]string{"tier": "gold", "region": "eu"}
	collected := map[string]json.RawMessage{"limit": json.RawMessage(`250`), "profile": json.RawMessage(`{"vip": true}`)}
	cases := []struct {
		expr      string
		args      string
		variables map[string]string
		collected map[string]json.RawMessage
		want      bool
	}{
		{`args.amount > 100`, `{"amount": 150}`, nil, nil, true},
		{`args.amount > 100`, `{"amount": 99.5}`, nil, nil, false},
		{`args.amount > 100`, `{"amount": 100.5}`, nil, nil, true},
		{`variables.tier == "gold"`, `{}`, vars, nil, true},
		{`variables.tier == "gold"`, `{}`, map[string]string{"tier": "silver"}, nil, false},
		{`"limit" in collected && args.amount > collected.limit`, `{"amount": 300}`, nil, collected, true},
		{`"limit" in collected && args.amount > collected.limit`, `{"amount": 200}`, nil, collected, false},
		{`"limit" in collected && args.amount > collected.limit`, `{"amount": 300}`, nil, nil, false},
		{`has(collected.profile) && collected.profile.vip`, `{}`, nil, collected, true},
		{`args.reason.startsWith("fraud")`, `{"reason": "fraud suspected"}`, nil, nil, true},
		{`args.items.exists(x, x.qty > 10)`, `{"items": [{"qty": 1}, {"qty": 11}]}`, nil, nil, true},
		{`true`, ``, nil, nil, true},
		{``, `{"amount": 1000}`, nil, nil, false},
	}
	for _, c := range cases {
		got, err := ApprovalNeeded(c.expr, json.RawMessage(c.args), c.variables, c.collected)
		if err != nil {
			t.Errorf("%s on %s: unexpected error %v", c.expr, c.args, err)
		}
		if got != c.want {
			t.Errorf("%s on %s: got %v, want %v", c.expr, c.args, got, c.want)
		}
	}
}

// An evaluation error means the call needs approval: fail safe.
func TestApprovalNeededFailsSafe(t *testing.T) {
	cases := []struct{ expr, args, wantErr string }{
		{`args.amount > 100`, `{}`, "no such key"},
		{`args.amount > 100`, `{"amount": "lots"}`, "no such overload"},
		{`args.amount > 100`, `[1, 2]`, "not a JSON object"},
		{`args.amount > 100`, `{"amount": `, "not valid JSON"},
		{`variables.tier == "gold"`, `{}`, "no such key"},
		{`args.flag`, `{"flag": "yes"}`, "not bool"},
		{`args.amount >`, `{}`, "does not compile"},
		{`[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, a+b+c+d+e+f >= 0))))))`, `{}`, "cost limit"},
	}
	for _, c := range cases {
		got, err := ApprovalNeeded(c.expr, json.RawMessage(c.args), nil, nil)
		if !got {
			t.Errorf("%s on %s: needs no approval; an error must ask for it", c.expr, c.args)
		}
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s on %s: error %v, want one containing %q", c.expr, c.args, err, c.wantErr)
		}
	}
	// A collected value that is not JSON cannot be read: approval.
	got, err := ApprovalNeeded(`"x" in collected`, json.RawMessage(`{}`), nil, map[string]json.RawMessage{"x": json.RawMessage(`{bad`)})
	if !got || err == nil {
		t.Errorf("broken collected value: got %v, %v; want true with an error", got, err)
	}
}

func TestCheckApprovalCondition(t *testing.T) {
	for _, ok := range []string{
		``,
		`args.amount > 100`,
		`variables.tier == "gold"`,
		`"limit" in collected && args.amount > collected.limit`,
		`args.amount > 100 || variables.region != "eu"`,
		`collected.all(k, k != "blocked")`,
	} {
		if err := CheckApprovalCondition("agent.capabilities[0].approvalCondition", ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	cases := []struct{ expr, want string }{
		{`args.amount >`, "Syntax error"},
		{`i[0].mimeType == "text/plain"`, "undeclared reference to 'i'"},
		{`context.input[0].x == 1`, "undeclared reference to 'context'"},
		{`variables.tier + 1 > 0`, "no matching overload"},
		{`args.amount + 1`, "must return bool"},
		{`"x"`, "must return bool"},
		{`   `, "the expression is empty"},
		{`args.s.matches("(")`, "does not compile"},
	}
	for _, c := range cases {
		err := CheckApprovalCondition("agent.capabilities[0].approvalCondition", c.expr)
		if err == nil {
			t.Errorf("%q: accepted", c.expr)
			continue
		}
		se, ok := err.(*contract.Error)
		if !ok || se.Type != contract.ErrInvalidInput {
			t.Errorf("%q: %T %v, want INVALID_INPUT", c.expr, err, err)
			continue
		}
		if !strings.HasPrefix(se.Message, "agent.capabilities[0].approvalCondition: ") || !strings.Contains(se.Message, c.want) {
			t.Errorf("%q: %q, want the path and %q", c.expr, se.Message, c.want)
		}
	}
	// The corrective message names the variables an approval condition sees.
	err := CheckApprovalCondition("p", `i.size() > 0`)
	if err == nil || !strings.Contains(err.Error(), "args, the call's arguments") {
		t.Errorf("missing the hint on the variables: %v", err)
	}
}

// Map iteration order never shows: the same inputs give the same result and
// the same error on every evaluation, from many goroutines at once.
func TestApprovalDeterminism(t *testing.T) {
	args := json.RawMessage(`{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7}`)
	collected := map[string]json.RawMessage{}
	for _, k := range []string{"k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"} {
		collected[k] = json.RawMessage(`"` + k + `"`)
	}
	exprs := []string{
		`args.map(k, k)[0] == "a"`,
		`collected.map(k, collected[k])[7] == "k8"`,
		`args.all(k, k == "a" || args[k] > 1 || args.nope)`,
	}
	type res struct {
		ok  bool
		err string
	}
	first := make([]res, len(exprs))
	for i, e := range exprs {
		ok, err := ApprovalNeeded(e, args, nil, collected)
		first[i] = res{ok, errString(err)}
	}
	if !first[0].ok || first[0].err != "" || !first[1].ok || first[1].err != "" {
		t.Fatalf("sorted keys: %+v", first)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 50; n++ {
				for i, e := range exprs {
					ok, err := ApprovalNeeded(e, args, nil, collected)
					if (res{ok, errString(err)}) != first[i] {
						t.Errorf("%s: %v %v, first %+v", e, ok, err, first[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
