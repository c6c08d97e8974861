package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/internal/testmodel"
)

// A 600 KB text file referenced by a conversation is more than a 128 K-token
// model takes. The request is counted before it is sent and the file cut to
// fit, with a note saying so: the model (which refuses anything over its
// context with OpenAI's 400 context_length_exceeded) answers the first time.
func TestLargeTextFileIsCutToFitTheContext(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetContextLimit(128_000)
	h.model.SetHandler(func(testmodel.Call) testmodel.Reply {
		return testmodel.Reply{Text: `{"message":"read it","attachments":[]}`}
	})
	m := h.mountSpec("files")
	id := "context-cut"
	spec := agent("reader") // the default context: 128,000 tokens
	spec["mount"] = m
	startTask(t, h, id, map[string]any{"agent": spec})

	var log strings.Builder
	log.WriteString("START-OF-LOG\n")
	for i := 0; log.Len() < 600_000; i++ {
		fmt.Fprintf(&log, "2026-11-29T10:00:%02d.000Z worker-%d handled request %06d in 12 ms\n", i%60, i%7, i)
	}
	log.WriteString("END-OF-LOG\n")
	part := upload(t, m, id, "log.txt", "text/plain", []byte(log.String()))
	_, err := sendUpdate(t, id, map[string]any{"message": []any{
		map[string]any{"mimeType": "text/plain", "text": "What went wrong in this log?"}, partMap(part)}})
	require.NoError(t, err)

	st := waitOutputs(t, id, 1)
	require.Nil(t, st.Error)
	msgs := messages(t, id, nil)
	require.Equal(t, "read it", *msgs[len(msgs)-1].Message[0].Text)

	calls := h.model.Calls()
	require.Len(t, calls, 1, "counted before it was sent: nothing refused")
	call := calls[0]
	t.Logf("file %d bytes; the request: %d tokens by the test model's count", log.Len(), call.Tokens)
	require.False(t, call.Refused)
	require.LessOrEqual(t, call.Tokens, 112_000, "within the context less an eighth for the answer")
	sent := call.Messages[len(call.Messages)-1].Content
	require.Contains(t, sent, "[task://log.txt]\nSTART-OF-LOG\n2026-11-29T10:00:00.000Z worker-0 handled request 000000")
	require.Regexp(t, `\n\[task://log\.txt: cut here: showing the first \d+ of `+fmt.Sprint(log.Len())+` bytes; the rest did not fit the model's context window\]$`, sent)
	require.NotContains(t, sent, "END-OF-LOG")
	t.Log(sent[strings.LastIndex(sent, "\n")+1:])
}

// A provider whose context is smaller than the agent says refuses the
// request; the model activity sends half as much each time (older entries
// left out) until it is answered, within the same attempt.
func TestContextLengthRefusalShrinksTheRequest(t *testing.T) {
	h := newHarness(t)
	h.startWorker()
	h.model.SetContextLimit(2_000)
	id := "context-shrink"
	var history []any
	for i := 0; i < 12; i++ {
		role := map[bool]string{true: "user", false: "assistant"}[i%2 == 0]
		history = append(history, map[string]any{"role": role, "content": fmt.Sprintf("entry-%02d ", i) + strings.Repeat("h", 4_000)})
	}
	startTask(t, h, id, map[string]any{"agent": agent("small"), "history": history})
	_, err := sendUpdate(t, id, text("and now?"))
	require.NoError(t, err)

	st := waitOutputs(t, id, 1)
	require.Nil(t, st.Error)
	msgs := messages(t, id, nil)
	require.Equal(t, "echo: and now?", *msgs[len(msgs)-1].Message[0].Text)

	calls := h.model.Calls()
	for _, c := range calls {
		t.Logf("call %d: %d tokens, %d messages, refused %v", c.Seq, c.Tokens, len(c.Messages), c.Refused)
	}
	require.GreaterOrEqual(t, len(calls), 3, "refused at least twice")
	for i, c := range calls {
		last := i == len(calls)-1
		require.Equal(t, !last, c.Refused, "call %d of %d", i+1, len(calls))
		if i > 0 {
			require.Less(t, c.Tokens, calls[i-1].Tokens, "each request is smaller than the last")
		}
		require.Equal(t, "and now?", c.Messages[len(c.Messages)-1].Content, "the newest entry is always sent")
	}
	require.LessOrEqual(t, calls[len(calls)-1].Tokens, 2_000)
	require.Greater(t, calls[0].Tokens, 12_000, "the first request had the whole history")
}
