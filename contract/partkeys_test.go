package contract

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Decoding stays lenient (what the runtime wrote, or a newer build's
// field, reads as before, the key left out), and notes a key a part does
// not have, so CheckPartKeys refuses it in what a caller sends.
func TestUnknownPartKeysAreNotedAndRefused(t *testing.T) {
	var in TaskIO
	require.NoError(t, json.Unmarshal([]byte(`{"message":[
		{"mimeType":"text/plain","text":"first"},
		{"mimeType":"text/plain","text":"see attached","bytes":[1,2,3],"data":"AAEC"}
	],"ticket":7}`), &in))
	require.Len(t, in.Message, 2)
	require.Equal(t, "see attached", *in.Message[1].Text, "the part itself decodes")
	require.Nil(t, in.Message[0].UnknownKeys())
	require.Equal(t, []string{"bytes", "data"}, in.Message[1].UnknownKeys())

	err := CheckPartKeys(in)
	require.Error(t, err)
	require.Equal(t, ErrInvalidInput, TypeOf(err))
	for _, want := range []string{`message[1]: "bytes", "data" are not content-part keys`, `"mimeType", "text", "file", "sizeBytes", "metadata"`, "file reference"} {
		require.Contains(t, err.Error(), want)
	}

	// Encoding never writes them: what the runtime stores of the part is
	// the part's own keys, and reads back with nothing noted.
	b, err := json.Marshal(in)
	require.NoError(t, err)
	require.NotContains(t, string(b), "bytes")
	var again TaskIO
	require.NoError(t, json.Unmarshal(b, &again))
	require.NoError(t, CheckPartKeys(again))
	require.Equal(t, in.Message[1].Text, again.Message[1].Text)

	var one TaskIO
	require.NoError(t, json.Unmarshal([]byte(`{"message":[{"mimeType":"image/png","file":"task://a.png","sizeBytes":3,"metadata":{"alt":"a"},"bytes":[1]}]}`), &one))
	require.Equal(t, `message[0]: "bytes" is not a content-part key`, strings.SplitN(MessageOf(CheckPartKeys(one)), ";", 2)[0])
}

// A part without unknown keys decodes exactly as before: its fields (keys
// matched as encoding/json matches them) and nothing noted; a null part is
// the zero part; a part of the wrong shape is an error, as it was.
func TestKnownPartKeysDecodeAsBefore(t *testing.T) {
	var in TaskIO
	require.NoError(t, json.Unmarshal([]byte(`{"message":[{"mimeType":"text/plain","text":"hi","sizeBytes":2,"metadata":{"k":1}},{"MimeType":"text/plain","Text":"case"},null]}`), &in))
	require.Equal(t, "hi", *in.Message[0].Text)
	require.Equal(t, int64(2), *in.Message[0].SizeBytes)
	require.JSONEq(t, `{"k":1}`, string(in.Message[0].Metadata))
	require.Equal(t, "case", *in.Message[1].Text)
	require.Equal(t, ContentPart{}, in.Message[2])
	require.NoError(t, CheckPartKeys(in))

	require.Error(t, json.Unmarshal([]byte(`{"message":[{"mimeType":"text/plain","text":7}]}`), &in))
	require.Error(t, json.Unmarshal([]byte(`{"message":[{"mimeType":"text/plain","text":7,"bytes":1}]}`), &in))
	require.Error(t, json.Unmarshal([]byte(`{"message":["text"]}`), &in))
}
