package tasksapi

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agenttask/agenttask/internal/codec"
)

func testCodec(t *testing.T) *codec.Codec {
	t.Helper()
	k := make([]byte, codec.KeySize)
	_, _ = rand.Read(k)
	c, err := codec.New(codec.Keys{"k1": k}, "k1")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func codecRequest(t *testing.T, h http.Handler, method, path, remote string, body []byte, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, bytes.NewReader(body))
	r.RemoteAddr = remote
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestCodecServer(t *testing.T) {
	c := testCodec(t)
	keys, err := ParseKeys("viewer=view,caller=call,decoder=decode", "developer")
	if err != nil {
		t.Fatal(err)
	}
	origins, err := ParseOrigins("")
	if err != nil {
		t.Fatal(err)
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := withCodec(api, CodecConfig{Codec: c, Keys: keys, Origins: origins})
	const remote = "10.1.2.3:5555"
	auth := map[string]string{"Authorization": "Bearer decoder", "Content-Type": "application/json"}

	secret := "codec server secret 31337"
	plain, _ := converter.GetDefaultDataConverter().ToPayload(map[string]string{"text": secret})
	body, _ := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{plain}})

	// encode
	w := codecRequest(t, h, http.MethodPost, "/codec/encode", remote, body, auth)
	if w.Code != http.StatusOK {
		t.Fatalf("encode: %d %s", w.Code, w.Body)
	}
	var enc commonpb.Payloads
	if err := protojson.Unmarshal(w.Body.Bytes(), &enc); err != nil {
		t.Fatalf("encode answer %s: %v", w.Body, err)
	}
	if len(enc.Payloads) != 1 || string(enc.Payloads[0].Metadata["encoding"]) != "binary/encrypted" || bytes.Contains(w.Body.Bytes(), []byte("31337")) {
		t.Fatalf("encode answer %s", w.Body)
	}
	// what the codec encodes, the data converter reads
	var v map[string]string
	if err := c.DataConverter().FromPayload(enc.Payloads[0], &v); err != nil || v["text"] != secret {
		t.Fatalf("encoded payload reads %v, %v", v, err)
	}

	// decode a payload the worker's data converter wrote
	sealed, _ := c.DataConverter().ToPayload(map[string]string{"text": secret})
	body, _ = protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{sealed}})
	w = codecRequest(t, h, http.MethodPost, "/codec/decode", remote, body, auth)
	if w.Code != http.StatusOK {
		t.Fatalf("decode: %d %s", w.Code, w.Body)
	}
	var dec commonpb.Payloads
	if err := protojson.Unmarshal(w.Body.Bytes(), &dec); err != nil || len(dec.Payloads) != 1 {
		t.Fatalf("decode answer %s: %v", w.Body, err)
	}
	if string(dec.Payloads[0].Metadata["encoding"]) != "json/plain" || string(dec.Payloads[0].Data) != `{"text":"`+secret+`"}` {
		t.Fatalf("decoded %v", dec.Payloads[0])
	}

	// CORS preflight from the UI's origin
	w = codecRequest(t, h, http.MethodOptions, "/codec/decode", remote, nil, map[string]string{
		"Origin": "http://localhost:8233", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,x-namespace",
	})
	if w.Code != http.StatusNoContent || w.Header().Get("Access-Control-Allow-Origin") != "http://localhost:8233" {
		t.Fatalf("preflight: %d %v", w.Code, w.Header())
	}
	for _, hd := range []string{"content-type", "authorization", "x-namespace"} {
		if !strings.Contains(strings.ToLower(w.Header().Get("Access-Control-Allow-Headers")), hd) {
			t.Fatalf("preflight allows headers %q, not %s", w.Header().Get("Access-Control-Allow-Headers"), hd)
		}
	}
	if !strings.Contains(w.Header().Get("Access-Control-Allow-Methods"), "POST") || w.Header().Get("Access-Control-Allow-Credentials") != "true" {
		t.Fatalf("preflight headers %v", w.Header())
	}
	// another origin gets no CORS headers
	w = codecRequest(t, h, http.MethodOptions, "/codec/decode", remote, nil, map[string]string{"Origin": "http://evil.example"})
	if w.Code != http.StatusForbidden || w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from another origin: %d %v", w.Code, w.Header())
	}
	// the actual request from the UI's origin carries the CORS header too
	w = codecRequest(t, h, http.MethodPost, "/codec/decode", remote, body, map[string]string{"Origin": "http://localhost:8233", "Authorization": "Bearer decoder"})
	if w.Code != http.StatusOK || w.Header().Get("Access-Control-Allow-Origin") != "http://localhost:8233" {
		t.Fatalf("cross-origin POST: %d %v", w.Code, w.Header())
	}

	// auth: none, unknown, without decode (view and developer keys too); loopback is no exception outside dev mode
	for _, tc := range []struct {
		name, remote string
		header       map[string]string
		want         int
	}{
		{"no key", remote, nil, http.StatusUnauthorized},
		{"no key from loopback, not dev", "127.0.0.1:4000", nil, http.StatusUnauthorized},
		{"unknown key", remote, map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"call only", remote, map[string]string{"Authorization": "Bearer caller"}, http.StatusForbidden},
		{"view only", remote, map[string]string{"Authorization": "Bearer viewer"}, http.StatusForbidden},
		{"developer", remote, map[string]string{"Authorization": "Bearer developer"}, http.StatusForbidden},
	} {
		w := codecRequest(t, h, http.MethodPost, "/codec/decode", tc.remote, body, tc.header)
		if w.Code != tc.want || bytes.Contains(w.Body.Bytes(), []byte("31337")) {
			t.Fatalf("%s: %d %s, want %d", tc.name, w.Code, w.Body, tc.want)
		}
	}

	// dev mode: loopback without a key is served, other addresses are not
	dev := withCodec(api, CodecConfig{Codec: c, Keys: keys, Origins: origins, OpenOnLoopback: true})
	for _, lo := range []string{"127.0.0.1:4000", "[::1]:4000"} {
		if w := codecRequest(t, dev, http.MethodPost, "/codec/decode", lo, body, nil); w.Code != http.StatusOK {
			t.Fatalf("dev loopback %s: %d %s", lo, w.Code, w.Body)
		}
	}
	if w := codecRequest(t, dev, http.MethodPost, "/codec/decode", remote, body, nil); w.Code != http.StatusUnauthorized {
		t.Fatalf("dev mode from %s without a key: %d", remote, w.Code)
	}

	// other routes go to the API; other methods are refused
	if w := codecRequest(t, h, http.MethodGet, "/v1/tasks", remote, nil, nil); w.Code != http.StatusTeapot {
		t.Fatalf("API route: %d", w.Code)
	}
	if w := codecRequest(t, h, http.MethodGet, "/codec/decode", remote, nil, auth); w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", w.Code)
	}
	// an undecodable payload is a 400, not a crash
	bad, _ := json.Marshal(map[string]any{"payloads": []any{map[string]any{"metadata": map[string]string{"encoding": "YmluYXJ5L2VuY3J5cHRlZA==", "encryption-key-id": "azk="}, "data": "AAAA"}}})
	if w := codecRequest(t, h, http.MethodPost, "/codec/decode", remote, bad, auth); w.Code != http.StatusBadRequest {
		b, _ := io.ReadAll(w.Body)
		t.Fatalf("unknown key: %d %s", w.Code, b)
	}
	// without keys nothing is mounted
	if withCodec(api, CodecConfig{Keys: keys}) == nil {
		t.Fatal("nil handler")
	}
	if w := codecRequest(t, withCodec(api, CodecConfig{Keys: keys}), http.MethodPost, "/codec/decode", remote, body, auth); w.Code != http.StatusTeapot {
		t.Fatalf("no codec: %d", w.Code)
	}
}

func TestParseOrigins(t *testing.T) {
	if o, err := ParseOrigins("https://ui.example.com, http://localhost:8233/"); err != nil || len(o) != 2 || o[1] != "http://localhost:8233" {
		t.Fatalf("%v %v", o, err)
	}
	if _, err := ParseOrigins("ui.example.com/path"); err == nil || !strings.Contains(err.Error(), EnvCodecCORSOrigins) {
		t.Fatalf("bad origin: %v", err)
	}
	// * would let any page call it with the user's credentials
	if _, err := ParseOrigins("https://ui.example.com,*"); err == nil || !strings.Contains(err.Error(), "* is not allowed") {
		t.Fatalf("*: %v", err)
	}
}

// auditLog records the codec server's log lines.
type auditLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *auditLog) add(level, msg string, kv []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimSpace(fmt.Sprintln(append([]any{level, msg}, kv...)...)))
}
func (l *auditLog) Debug(msg string, kv ...any) { l.add("DEBUG", msg, kv) }
func (l *auditLog) Info(msg string, kv ...any)  { l.add("INFO", msg, kv) }
func (l *auditLog) Warn(msg string, kv ...any)  { l.add("WARN", msg, kv) }
func (l *auditLog) Error(msg string, kv ...any) { l.add("ERROR", msg, kv) }

// The codec server decodes for its own namespace only, logs who decoded
// how much (never what), takes at most 4 MiB and limits each key's rate.
func TestCodecLockdown(t *testing.T) {
	c := testCodec(t)
	keys, err := ParseKeys("decoder=decode", "")
	if err != nil {
		t.Fatal(err)
	}
	audit := &auditLog{}
	h := NewCodecHandler(CodecConfig{Codec: c, Keys: keys, Namespace: "prod", Origins: []string{"https://ui.example.com"}, RateLimit: 5, Log: audit})
	const remote = "10.1.2.3:5555"
	secret := "lockdown secret 4242"
	var sealed []*commonpb.Payload
	for i := 0; i < 3; i++ {
		p, _ := c.DataConverter().ToPayload(secret)
		sealed = append(sealed, p)
	}
	body, _ := protojson.Marshal(&commonpb.Payloads{Payloads: sealed})
	hdr := func(ns string) map[string]string {
		m := map[string]string{"Authorization": "Bearer decoder", "Content-Type": "application/json"}
		if ns != "" {
			m[NamespaceHeader] = ns
		}
		return m
	}

	w := codecRequest(t, h, http.MethodPost, "/codec/decode", remote, body, hdr("prod"))
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), base64Of(`"`+secret+`"`)) {
		t.Fatalf("decode in its namespace: %d %s", w.Code, w.Body)
	}
	w = codecRequest(t, h, http.MethodPost, "/codec/decode", remote, body, hdr("staging"))
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), `\"staging\" is not this codec server's namespace \"prod\"`) {
		t.Fatalf("another namespace: %d %s", w.Code, w.Body)
	}
	// no header (the temporal CLI, the SDK's remote codec): served, logged as such
	if w = codecRequest(t, h, http.MethodPost, "/codec/decode", remote, body, hdr("")); w.Code != http.StatusOK {
		t.Fatalf("no namespace header: %d %s", w.Code, w.Body)
	}
	// over 4 MiB: 413 with a problem
	big := append([]byte(`{"payloads":[{"metadata":{},"data":"`), bytes.Repeat([]byte("A"), MaxCodecBodyBytes)...)
	big = append(big, `"}]}`...)
	w = codecRequest(t, h, http.MethodPost, "/codec/decode", remote, big, hdr("prod"))
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "validation_failed") || !strings.Contains(w.Body.String(), "4 MiB") {
		t.Fatalf("5 MiB body: %d %s", w.Code, w.Body)
	}
	// 4 calls so far (the refused namespace counts); the 6th is over 5 a minute
	if w = codecRequest(t, h, http.MethodPost, "/codec/decode", remote, body, hdr("prod")); w.Code != http.StatusOK {
		t.Fatalf("5th call: %d %s", w.Code, w.Body)
	}
	w = codecRequest(t, h, http.MethodPost, "/codec/decode", remote, body, hdr("prod"))
	if w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), CodeRateLimited) || w.Header().Get("Retry-After") == "" {
		t.Fatalf("6th call: %d %v %s", w.Code, w.Header(), w.Body)
	}

	audit.mu.Lock()
	defer audit.mu.Unlock()
	all := strings.Join(audit.lines, "\n")
	if strings.Contains(all, "4242") || strings.Contains(all, base64Of(`"`+secret+`"`)) || strings.Contains(all, "decoder") {
		t.Fatalf("the log holds content or the key:\n%s", all)
	}
	id := KeyID("decoder")
	want := []string{
		"INFO codec call op decode key_id " + id + " namespace prod",
		"WARN codec call refused: another namespace op decode key_id " + id + " namespace staging",
		"payloads 3 bytes_in " + strconv.Itoa(len(body)),
	}
	for _, s := range want {
		if !strings.Contains(all, s) {
			t.Fatalf("the log lacks %q:\n%s", s, all)
		}
	}
}

func base64Of(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
