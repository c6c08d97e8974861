package connect

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/agenttask/agenttask/internal/codec"
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
	// Without keys, payloads are written in the clear, and one encrypted
	// by another process is an error naming its key and the variable (the
	// SDK's own converter said only that binary/encrypted is unknown).
	sealed, err := o.DataConverter.ToPayload("sealed")
	if err != nil {
		t.Fatal(err)
	}
	o, err = Options(func(string) string { return "" }, nil)
	if err != nil || o.DataConverter == nil || o.FailureConverter == nil {
		t.Fatalf("no keys: %v, %v", o.DataConverter, err)
	}
	defer codec.ForgetMissingKeys()
	p, err = o.DataConverter.ToPayload("hello")
	if err != nil || string(p.Metadata["encoding"]) != "json/plain" {
		t.Fatalf("no keys: payload %v, %v", p, err)
	}
	var s string
	if err := o.DataConverter.FromPayload(sealed, &s); !errors.Is(err, codec.ErrUnknownKey) || !strings.Contains(err.Error(), `key "k1", but AGENT_CODEC_KEYS is not set`) {
		t.Fatalf("no keys, an encrypted payload: %v", err)
	}
}
