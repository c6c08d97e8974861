package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/broker"
	"github.com/agenttask/agenttask/internal/codec"
	"github.com/agenttask/agenttask/internal/testmodel"
)

// With codec keys set (AGENT_CODEC_KEYS), bin/worker and bin/api keep a
// run's streamed events encrypted in the broker: a plain NATS client
// reading the run's stored messages finds no plaintext of the answer,
// only sealed blobs naming the key; the API still serves the text.
func TestStreamedEventsAreEncryptedInTheBroker(t *testing.T) {
	h := newHarness(t)
	keys := codec.EnvKeys + "=k1:" + base64.StdEncoding.EncodeToString(randomKey(t))
	secret := "zebra-quartz-" + base64.RawURLEncoding.EncodeToString(randomKey(t)[:9])
	h.model.SetHandler(func(c testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Chunks: []string{"Your parcel code ", "is " + secret, "."}}
	})
	w := exec.Command(workerBinary(t))
	w.Env = append(h.workerEnv(), broker.EnvURL+"="+natsURL, keys)
	w.Stdout, w.Stderr = os.Stderr, os.Stderr
	require.NoError(t, w.Start())
	t.Cleanup(func() { stopProcess(w) })
	addr := startAPIProcess(t, h, broker.EnvURL+"="+natsURL, keys)
	api := &apiServer{t: t, url: "http://" + addr, openapi: checkedInOpenAPI(t, "http://"+addr)}
	createSeedTask(t, api, seedTask())

	s := openEvents(t, api.url, "/v1/tasks/support-reply/run", callKey, streamBody)
	require.Equal(t, http.StatusOK, s.Resp.StatusCode)
	id := s.Resp.Header.Get("X-Request-Id")
	events := s.until("done", 60*time.Second)
	want := "Your parcel code is " + secret + "."
	require.Equal(t, want, textOf(events), "the API serves the text")

	// The run's memo is encrypted too (the API's client writes it through
	// the codec): its per-run routes read it through the codec, so a
	// reconnect and the messages find the run (they answered
	// run_not_found when the memo was read as plain JSON).
	again := openEvents(t, api.url, "/v1/runs/"+id+"/events", viewKey, nil)
	require.Equal(t, http.StatusOK, again.Resp.StatusCode)
	require.Equal(t, want, textOf(again.until("done", 30*time.Second)), "a reconnect reads the run whole")
	msgs := api.call("GET", "/v1/runs/"+id+"/messages", viewKey, nil)
	require.Equal(t, http.StatusOK, msgs.Status, "%s", msgs.Raw)
	require.Contains(t, string(msgs.Raw), secret)

	stored := storedMessages(t, id)
	all := openEvents(t, api.url, "/v1/runs/"+id+"/events?events=all", viewKey, nil).until("done", 30*time.Second)
	require.Len(t, stored, len(all), "one stored message per event of the full vocabulary (the turn's start too)")
	require.Equal(t, "turn.started", all[0].typ())
	require.Contains(t, all[0].Data["inputs"].([]any)[0].(map[string]any)["text"], "My order is late.", "served decrypted")
	for i, data := range stored {
		require.False(t, bytes.Contains(data, []byte(secret)), "message %d holds the answer: %s", i, data)
		require.False(t, bytes.Contains(data, []byte("parcel")), "message %d holds the answer: %s", i, data)
		require.False(t, bytes.Contains(data, []byte("order is late")), "message %d holds the input: %s", i, data)
		var m struct {
			Type   string `json:"type"`
			Sealed []byte `json:"sealed"`
			Text   string `json:"text"`
		}
		require.NoError(t, json.Unmarshal(data, &m), "%s", data)
		if m.Type == broker.TypeText {
			require.Empty(t, m.Text)
			require.True(t, bytes.HasPrefix(m.Sealed, append(append([]byte{}, codec.BlobMagic...), 2, 'k', '1')), "message %d is not sealed under k1: %s", i, data)
		}
	}
}

// storedMessages is every message the broker holds for run id, read with a
// plain NATS client (no codec).
func storedMessages(t *testing.T, id string) [][]byte {
	t.Helper()
	ctx := ctxT(t, 20*time.Second)
	js, stream, subj := runStream(t, ctx, id)
	last, err := stream.GetLastMsgForSubject(ctx, subj)
	require.NoError(t, err)
	cons, err := js.OrderedConsumer(ctx, broker.StreamName, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj}})
	require.NoError(t, err)
	var out [][]byte
	for {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		require.NoError(t, err)
		out = append(out, m.Data())
		meta, err := m.Metadata()
		require.NoError(t, err)
		if meta.Sequence.Stream >= last.Sequence {
			return out
		}
	}
}
