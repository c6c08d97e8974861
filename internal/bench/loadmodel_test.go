package main

import "testing"

// The load model's skim of a request answers what a whole decode answers,
// and leaves to the decode what it cannot skim.
func TestLoadModelSkimsAsItDecodes(t *testing.T) {
	for _, body := range []string{
		`{"model":"echo","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"first"},{"role":"assistant","content":"echo: first"},{"role":"user","content":"second \"quoted\" \u003cb\u003e"}],"stream":false,"max_tokens":200}`,
		`{"model":"a\"b","messages":[{"role":"user","content":"only"}],"tools":[{"type":"function","function":{"name":"t"}}],"stream":false}`,
		`{"model":"echo","messages":[{"role":"user","content":[{"type":"text","text":"parts"}]}],"stream":false}`,
	} {
		m1, t1, ok1 := skimRequest([]byte(body))
		m2, t2, ok2 := decodeRequest([]byte(body))
		if !ok1 || !ok2 || m1 != m2 || t1 != t2 {
			t.Errorf("%s:\n skim   %q %q %v\n decode %q %q %v", body, m1, t1, ok1, m2, t2, ok2)
		}
	}
	if _, _, ok := skimRequest([]byte(`{"messages":[{"content":"x","role":"user"}],"model":"m"}`)); ok {
		t.Error("skimmed a body whose fields come in another order; it should be left to the decode")
	}
	if m, text, ok := decodeRequest([]byte(`{"messages":[{"content":"x","role":"user"}],"model":"m"}`)); !ok || m != "m" || text != "echo: x" {
		t.Errorf("decode: %q %q %v", m, text, ok)
	}
}
