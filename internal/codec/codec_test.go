package codec

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/memblob"
	"gocloud.dev/gcerrors"
	"google.golang.org/protobuf/proto"
)

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func b64(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func mustCodec(t *testing.T, keys Keys, current string) *Codec {
	t.Helper()
	c, err := New(keys, current)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRoundTripAndMetadata(t *testing.T) {
	k1 := newKey(t)
	c, err := FromGetenv(env(map[string]string{EnvKeys: "k1:" + b64(k1)}))
	if err != nil || c == nil {
		t.Fatalf("FromGetenv: %v, %v", c, err)
	}
	secret := "the unique secret text 7f3a"
	p, err := c.DataConverter().ToPayload(map[string]string{"text": secret})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(p.Metadata[MetadataEncoding]); got != "binary/encrypted" {
		t.Fatalf("encoding %q", got)
	}
	if got := string(p.Metadata[MetadataKeyID]); got != "k1" {
		t.Fatalf("encryption-key-id %q", got)
	}
	if len(p.Metadata) != 2 {
		t.Fatalf("metadata %v: only encoding and encryption-key-id may be in the clear", p.Metadata)
	}
	if bytes.Contains(p.Data, []byte(secret)) || bytes.Contains(p.Data, []byte("json/plain")) {
		t.Fatal("the payload's data holds the plain text")
	}
	var back map[string]string
	if err := c.DataConverter().FromPayload(p, &back); err != nil {
		t.Fatal(err)
	}
	if back["text"] != secret {
		t.Fatalf("round trip: %v", back)
	}

	// The format, as another language would read it: nonce, then the
	// AES-256-GCM seal of the marshalled original Payload.
	plain, err := c.open("k1", p.Data)
	if err != nil {
		t.Fatal(err)
	}
	var orig commonpb.Payload
	if err := proto.Unmarshal(plain, &orig); err != nil {
		t.Fatal(err)
	}
	if string(orig.Metadata["encoding"]) != "json/plain" || string(orig.Data) != `{"text":"`+secret+`"}` {
		t.Fatalf("inner payload %v", &orig)
	}

	// Two encodings of the same value differ (random nonce).
	p2, _ := c.DataConverter().ToPayload(map[string]string{"text": secret})
	if bytes.Equal(p.Data, p2.Data) {
		t.Fatal("same ciphertext twice: the nonce is not random")
	}
}

func TestRotatedKeyStaysReadable(t *testing.T) {
	k1, k2 := newKey(t), newKey(t)
	old := mustCodec(t, Keys{"k1": k1}, "k1")
	p, err := old.DataConverter().ToPayload("written under k1")
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := FromGetenv(env(map[string]string{EnvKeys: "k1:" + b64(k1) + ",k2:" + b64(k2), EnvKeyID: "k2"}))
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if err := rotated.DataConverter().FromPayload(p, &s); err != nil || s != "written under k1" {
		t.Fatalf("reading a k1 payload after rotation: %q, %v", s, err)
	}
	p2, _ := rotated.DataConverter().ToPayload("new")
	if got := string(p2.Metadata[MetadataKeyID]); got != "k2" {
		t.Fatalf("new payloads under %q, want k2", got)
	}
	// Without k1 listed, the old payload is a clear error naming the key.
	onlyK2 := mustCodec(t, Keys{"k2": k2}, "k2")
	err = onlyK2.DataConverter().FromPayload(p, &s)
	if !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), `"k1"`) || !strings.Contains(err.Error(), EnvKeys) {
		t.Fatalf("unknown key: %v", err)
	}
	// The same id with other key material does not decrypt.
	wrong := mustCodec(t, Keys{"k1": k2}, "k1")
	if err := wrong.DataConverter().FromPayload(p, &s); err == nil || errors.Is(err, ErrUnknownKey) {
		t.Fatalf("wrong key material: %v", err)
	}
}

func TestPassthroughOfUnencrypted(t *testing.T) {
	c := mustCodec(t, Keys{"k1": newKey(t)}, "k1")
	plain, _ := converter.GetDefaultDataConverter().ToPayload(map[string]int{"n": 1})
	out, err := c.Decode([]*commonpb.Payload{plain})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(out[0], plain) {
		t.Fatalf("unencrypted payload changed: %v", out[0])
	}
	var v map[string]int
	if err := c.DataConverter().FromPayload(plain, &v); err != nil || v["n"] != 1 {
		t.Fatalf("%v %v", v, err)
	}
}

func TestEnvValidation(t *testing.T) {
	k := b64(newKey(t))
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"bad base64", map[string]string{EnvKeys: "k1:not*base64!"}, "not valid base64"},
		{"wrong length", map[string]string{EnvKeys: "k1:" + b64(make([]byte, 16))}, "16 bytes once decoded, want 32"},
		{"no colon", map[string]string{EnvKeys: k}, "must be id:base64key"},
		{"current not a key", map[string]string{EnvKeys: "k1:" + k, EnvKeyID: "k9"}, `"k9" is not among the keys`},
		{"several keys, no current", map[string]string{EnvKeys: "k1:" + k + ",k2:" + k}, "set " + EnvKeyID},
		{"id without keys", map[string]string{EnvKeyID: "k1"}, "is set but " + EnvKeys + " is not"},
		{"duplicate", map[string]string{EnvKeys: "k1:" + k + ",k1:" + k}, "listed twice"},
		{"bad id", map[string]string{EnvKeys: "k 1:" + k}, "key id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromGetenv(env(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want an error containing %q", c, err, tc.want)
			}
		})
	}
	c, err := FromGetenv(env(nil))
	if c != nil || err != nil {
		t.Fatalf("unset: %v, %v; want nil, nil", c, err)
	}
}

func TestFailureConverterEncryptsMessages(t *testing.T) {
	c := mustCodec(t, Keys{"k1": newKey(t)}, "k1")
	secret := "refund for order 99812 failed: card 4242"
	f := c.FailureConverter().ErrorToFailure(temporal.NewApplicationError(secret, "SOME_TYPE", map[string]string{"detail": secret}))
	raw, err := proto.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(secret)) {
		t.Fatalf("the failure holds the message in the clear: %v", f)
	}
	if f.GetEncodedAttributes() == nil || string(f.GetEncodedAttributes().Metadata[MetadataEncoding]) != EncodingEncrypted {
		t.Fatalf("encoded attributes not encrypted: %v", f.GetEncodedAttributes())
	}
	back := c.FailureConverter().FailureToError(f)
	var ae *temporal.ApplicationError
	if !errors.As(back, &ae) || ae.Message() != secret || ae.Type() != "SOME_TYPE" {
		t.Fatalf("decoded failure: %v", back)
	}
	var d map[string]string
	if err := ae.Details(&d); err != nil || d["detail"] != secret {
		t.Fatalf("details: %v %v", d, err)
	}
}

func TestWrapBucket(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	raw, err := blob.OpenBucket(ctx, "file://"+filepath.ToSlash(dir)+"?metadata=skip")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	k1, k2 := newKey(t), newKey(t)
	c1 := mustCodec(t, Keys{"k1": k1}, "k1")
	b := c1.WrapBucket(raw)
	secret := []byte(`{"text":"a transcript entry 5d1c"}`)
	if err := b.WriteAll(ctx, "tasks/a/entries/1.json", secret, &blob.WriterOptions{ContentType: "application/json", IfNotExist: true}); err != nil {
		t.Fatal(err)
	}
	stored, err := os.ReadFile(filepath.Join(dir, "tasks", "a", "entries", "1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored, []byte("5d1c")) || !bytes.HasPrefix(stored, append(append([]byte{}, BlobMagic...), 2, 'k', '1')) {
		t.Fatalf("stored object %q: want the magic, the key id and no plain text", stored)
	}
	got, err := b.ReadAll(ctx, "tasks/a/entries/1.json")
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("read back %q, %v", got, err)
	}
	// A range read sees the plain bytes.
	r, err := b.NewRangeReader(ctx, "tasks/a/entries/1.json", 2, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	part := make([]byte, 10)
	n, _ := r.Read(part)
	r.Close()
	if string(part[:n]) != `text` {
		t.Fatalf("range read %q", part[:n])
	}
	// IfNotExist keeps its code through the wrapper.
	err = b.WriteAll(ctx, "tasks/a/entries/1.json", secret, &blob.WriterOptions{IfNotExist: true})
	if gcerrors.Code(err) != gcerrors.FailedPrecondition {
		t.Fatalf("second IfNotExist write: %v (code %v)", err, gcerrors.Code(err))
	}
	if _, err := b.ReadAll(ctx, "missing"); gcerrors.Code(err) != gcerrors.NotFound {
		t.Fatalf("missing object: %v", err)
	}
	// A plaintext object (written before encryption) is read as it is.
	plain := []byte(`{"text":"old plaintext"}`)
	if err := raw.WriteAll(ctx, "tasks/a/entries/0.json", plain, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := b.ReadAll(ctx, "tasks/a/entries/0.json"); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("plaintext object: %q, %v", got, err)
	}
	// After rotation, objects under k1 stay readable; new ones are under k2.
	rot := mustCodec(t, Keys{"k1": k1, "k2": k2}, "k2").WrapBucket(raw)
	if got, err := rot.ReadAll(ctx, "tasks/a/entries/1.json"); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("k1 object after rotation: %q, %v", got, err)
	}
	if err := rot.WriteAll(ctx, "tasks/a/entries/2.json", secret, nil); err != nil {
		t.Fatal(err)
	}
	stored2, _ := os.ReadFile(filepath.Join(dir, "tasks", "a", "entries", "2.json"))
	if !bytes.HasPrefix(stored2, append(append([]byte{}, BlobMagic...), 2, 'k', '2')) {
		t.Fatalf("new object not under k2: %q", stored2[:12])
	}
	// Without the key, a clear error.
	_, err = mustCodec(t, Keys{"k2": k2}, "k2").WrapBucket(raw).ReadAll(ctx, "tasks/a/entries/1.json")
	if !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("k1 object without k1: %v", err)
	}
	// A nil codec wraps nothing.
	var none *Codec
	if none.WrapBucket(raw) != raw {
		t.Fatal("nil codec wrapped the bucket")
	}
}
