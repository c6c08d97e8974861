// Package codec encrypts what the runtime stores outside its own processes:
// Temporal payloads (through the SDK's data converter, failure messages
// included) and transcript and stash objects on blob storage (WrapBucket).
//
// Keys come from AGENT_CODEC_KEYS, "id:base64key,id:base64key", each key 32
// bytes (AES-256); AGENT_CODEC_KEY_ID names the one new data is encrypted
// with. Every key listed stays readable, so rotating is: add the new key,
// make it current, and keep the old one listed while anything written under
// it is still read.
//
// A payload is encrypted as AES-256-GCM over the proto encoding of the whole
// original Payload (metadata included):
//
//	metadata: encoding = "binary/encrypted", encryption-key-id = <key id>
//	data:     12-byte random nonce || AES-GCM seal (ciphertext and 16-byte tag), no additional data
//
// A payload whose encoding is not binary/encrypted is decoded as it is, so
// histories written before encryption was turned on stay readable. An
// encrypted payload whose key the process does not hold (AGENT_CODEC_KEYS
// unset, or not listing it) is never passed on undecoded: it is a
// *MissingKeyError naming the key and the variable, recorded for the
// process's log and /healthz, and inside a workflow task it fails the task
// (retried until the key is listed) instead of reaching the workflow
// (missing.go).
package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

// Environment variables.
const (
	EnvKeys  = "AGENT_CODEC_KEYS"   // id:base64key,... (32-byte keys)
	EnvKeyID = "AGENT_CODEC_KEY_ID" // the id of the key new data is encrypted with
)

// Payload metadata of an encrypted payload.
const (
	MetadataEncoding  = converter.MetadataEncoding // "encoding"
	MetadataKeyID     = "encryption-key-id"
	EncodingEncrypted = "binary/encrypted"
)

// KeySize is the size of every key: AES-256.
const KeySize = 32

// NonceSize is the size of the random nonce that starts every sealed value.
const NonceSize = 12

var keyIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Keys maps key IDs to 32-byte keys.
type Keys map[string][]byte

// ParseKeys reads AGENT_CODEC_KEYS: "id:base64key,id:base64key".
func ParseKeys(spec string) (Keys, error) {
	keys := Keys{}
	for i, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		id, b64, ok := strings.Cut(item, ":")
		id, b64 = strings.TrimSpace(id), strings.TrimSpace(b64)
		if !ok || b64 == "" {
			return nil, fmt.Errorf("%s: item %d must be id:base64key (for example k1:$(openssl rand -base64 32))", EnvKeys, i+1)
		}
		if !keyIDRE.MatchString(id) {
			return nil, fmt.Errorf("%s: key id %q must be 1 to 64 letters, digits, '.', '_' or '-'", EnvKeys, id)
		}
		if _, dup := keys[id]; dup {
			return nil, fmt.Errorf("%s: key id %q is listed twice", EnvKeys, id)
		}
		key, err := decodeBase64(b64)
		if err != nil {
			return nil, fmt.Errorf("%s: key %q is not valid base64 (standard or URL alphabet): %v; make one with: openssl rand -base64 32", EnvKeys, id, err)
		}
		if len(key) != KeySize {
			return nil, fmt.Errorf("%s: key %q is %d bytes once decoded, want %d (AES-256); make one with: openssl rand -base64 32", EnvKeys, id, len(key), KeySize)
		}
		keys[id] = key
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s lists no key: want id:base64key,... (for example k1:$(openssl rand -base64 32))", EnvKeys)
	}
	return keys, nil
}

func decodeBase64(s string) ([]byte, error) {
	var first error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err == nil {
			return b, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// IDs lists the key IDs, sorted.
func (k Keys) IDs() []string {
	ids := make([]string, 0, len(k))
	for id := range k {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Codec encrypts with its current key and decrypts with any of its keys. It
// is a converter.PayloadCodec, safe for concurrent use.
type Codec struct {
	current string
	aeads   map[string]cipher.AEAD
}

var _ converter.PayloadCodec = (*Codec)(nil)

// New returns a codec that encrypts with keys[current].
func New(keys Keys, current string) (*Codec, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("codec: no keys")
	}
	if _, ok := keys[current]; !ok {
		return nil, fmt.Errorf("%s=%q is not among the keys of %s (%s): name one of them, or add that key", EnvKeyID, current, EnvKeys, strings.Join(keys.IDs(), ", "))
	}
	c := &Codec{current: current, aeads: map[string]cipher.AEAD{}}
	for id, key := range keys {
		if len(key) != KeySize {
			return nil, fmt.Errorf("codec: key %q is %d bytes, want %d", id, len(key), KeySize)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("codec: key %q: %w", id, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("codec: key %q: %w", id, err)
		}
		c.aeads[id] = aead
	}
	return c, nil
}

// FromEnv reads AGENT_CODEC_KEYS and AGENT_CODEC_KEY_ID from the process's
// environment; nil (and no error) when AGENT_CODEC_KEYS is unset.
func FromEnv() (*Codec, error) { return FromGetenv(os.Getenv) }

// FromGetenv is FromEnv over getenv. With one key, AGENT_CODEC_KEY_ID may be
// left out; with several it is required.
func FromGetenv(getenv func(string) string) (*Codec, error) {
	spec, current := strings.TrimSpace(getenv(EnvKeys)), strings.TrimSpace(getenv(EnvKeyID))
	if spec == "" {
		if current != "" {
			return nil, fmt.Errorf("%s=%q is set but %s is not: set both to encrypt payloads, or neither", EnvKeyID, current, EnvKeys)
		}
		return nil, nil
	}
	keys, err := ParseKeys(spec)
	if err != nil {
		return nil, err
	}
	if current == "" {
		if len(keys) != 1 {
			return nil, fmt.Errorf("%s lists %d keys (%s): set %s to the one new data is encrypted with", EnvKeys, len(keys), strings.Join(keys.IDs(), ", "), EnvKeyID)
		}
		current = keys.IDs()[0]
	}
	return New(keys, current)
}

// KeyIDs lists the IDs of the keys the codec reads, sorted; none for a nil
// codec.
func (c *Codec) KeyIDs() []string {
	if c == nil {
		return nil
	}
	return c.ids()
}

// CurrentKeyID is the id of the key new data is encrypted with.
func (c *Codec) CurrentKeyID() string { return c.current }

// Encode encrypts every payload with the current key. A nil codec (no
// keys) leaves them as they are.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	if c == nil {
		return payloads, nil
	}
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("codec: encoding payload %d: %w", i, err)
		}
		sealed, err := c.seal(c.current, plain)
		if err != nil {
			return nil, err
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				MetadataEncoding: []byte(EncodingEncrypted),
				MetadataKeyID:    []byte(c.current),
			},
			Data: sealed,
		}
	}
	return out, nil
}

// Decode decrypts every encrypted payload with the key its metadata names;
// other payloads pass through unchanged. An encrypted payload under a key
// the codec does not hold (any, for a nil codec) is a *MissingKeyError.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[MetadataEncoding]) != EncodingEncrypted {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataKeyID])
		plain, err := c.open(id, p.GetData())
		if err != nil {
			return nil, fmt.Errorf("payload %d: %w", i, err)
		}
		var orig commonpb.Payload
		if err := proto.Unmarshal(plain, &orig); err != nil {
			return nil, fmt.Errorf("codec: payload %d decrypts with key %q but is not a Payload: %w", i, id, err)
		}
		out[i] = &orig
	}
	return out, nil
}

// ErrUnknownKey: data names a key id the codec does not have (every
// *MissingKeyError is one).
var ErrUnknownKey = errors.New("unknown encryption key")

func (c *Codec) seal(id string, plain []byte) ([]byte, error) {
	aead := c.aeads[id]
	out := make([]byte, NonceSize, NonceSize+len(plain)+aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		return nil, fmt.Errorf("codec: nonce: %w", err)
	}
	return aead.Seal(out, out[:NonceSize], plain, nil), nil
}

func (c *Codec) open(id string, sealed []byte) ([]byte, error) {
	if c == nil {
		return nil, missingKey(id, nil)
	}
	aead, ok := c.aeads[id]
	if !ok {
		return nil, missingKey(id, c.ids())
	}
	if len(sealed) < NonceSize+aead.Overhead() {
		return nil, fmt.Errorf("codec: encrypted data of %d bytes is shorter than a nonce and a tag", len(sealed))
	}
	plain, err := aead.Open(nil, sealed[:NonceSize], sealed[NonceSize:], nil)
	if err != nil {
		e := &MissingKeyError{KeyID: id, Have: c.ids(), Wrong: true}
		noteMissing(e)
		return nil, e
	}
	return plain, nil
}

func (c *Codec) ids() []string {
	ids := make([]string, 0, len(c.aeads))
	for id := range c.aeads {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// DataConverter is the SDK's default data converter with every payload
// encrypted. A nil codec's encrypts nothing and reads payloads in the
// clear as they are; both refuse an encrypted payload whose key they do not
// hold with a *MissingKeyError, and fail the workflow task that met it
// (missing.go).
func (c *Codec) DataConverter() converter.DataConverter {
	return dataConverter{converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)}
}

// FailureConverter encodes failures with DataConverter and moves their
// messages and stack traces into the encrypted encoded attributes
// (EncodeCommonAttributes), so a failure's text is not stored in the clear.
// A nil codec's keeps them in the clear and reads encrypted ones through
// DataConverter (so a missing key is named there too).
func (c *Codec) FailureConverter() converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter:          c.DataConverter(),
		EncodeCommonAttributes: c != nil,
	})
}

// Apply sets o's DataConverter and FailureConverter. A nil codec (no keys)
// sets the ones that write in the clear and name the key of any encrypted
// payload they meet, instead of the SDK's, which would hand it on undecoded.
func (c *Codec) Apply(o *client.Options) {
	o.DataConverter = c.DataConverter()
	o.FailureConverter = c.FailureConverter()
}
