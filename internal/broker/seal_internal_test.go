package broker

import (
	"errors"
	"strings"
	"testing"

	"github.com/agenttask/agenttask/internal/codec"
)

// A sealed event read without keys, or without its key, is unreadable with
// an error naming the key and AGENT_CODEC_KEYS.
func TestSealedEventWithoutItsKeyNamesIt(t *testing.T) {
	defer codec.ForgetMissingKeys()
	k1, err := codec.New(codec.Keys{"k1": make([]byte, codec.KeySize)}, "k1")
	if err != nil {
		t.Fatal(err)
	}
	k2, err := codec.New(codec.Keys{"k2": make([]byte, codec.KeySize)}, "k2")
	if err != nil {
		t.Fatal(err)
	}
	var writer Broker
	writer.SetCodec(k1)
	data, err := writer.encode(Event{Turn: 1, Text: "sealed text"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*codec.Codec{nil, k2} {
		var reader Broker
		reader.SetCodec(c)
		_, err := reader.decode(data)
		if !errors.Is(err, errUnreadable) || !errors.Is(err, codec.ErrUnknownKey) || !strings.Contains(err.Error(), `key "k1"`) || !strings.Contains(err.Error(), codec.EnvKeys) {
			t.Errorf("keys %v: %v", c.KeyIDs(), err)
		}
	}
}
