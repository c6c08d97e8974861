package connect

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestOptionsWithCodecKeys(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	env := map[string]string{"AGENT_CODEC_KEYS": "k1:" + key}
	o, err := Options(func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.DataConverter == nil || o.FailureConverter == nil {
		t.Fatal("keys set, but no data or failure converter")
	}
	p, err := o.DataConverter.ToPayload("hello")
	if err != nil || string(p.Metadata["encoding"]) != "binary/encrypted" {
		t.Fatalf("payload %v, %v", p, err)
	}
	env["AGENT_CODEC_KEYS"] = "k1:short"
	if _, err := Options(func(k string) string { return env[k] }, nil); err == nil || !strings.Contains(err.Error(), "AGENT_CODEC_KEYS") {
		t.Fatalf("bad key: %v", err)
	}
	o, err = Options(func(string) string { return "" }, nil)
	if err != nil || o.DataConverter != nil || o.FailureConverter != nil {
		t.Fatalf("no keys: %v, %v", o.DataConverter, err)
	}
}
