package activities

import (
	"bytes"
	"image"
	"image/png"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/llm"
)

func TestContextLimit(t *testing.T) {
	require.Equal(t, 112_000, contextLimit(contract.AgentSpec{}), "128,000 less an eighth")
	require.Equal(t, 127_000, contextLimit(contract.AgentSpec{MaxTokens: 1000}))
	require.Equal(t, 7_000, contextLimit(contract.AgentSpec{ContextTokens: 8000}))
	require.Equal(t, 7_500, contextLimit(contract.AgentSpec{ContextTokens: 8000, MaxTokens: 500}))
}

// OpenAI's published examples, and the two steps of the rule.
func TestImageTokens(t *testing.T) {
	for _, c := range []struct{ w, h, tokens int }{
		{1024, 1024, 765},  // scaled down to 768x768: 4 tiles
		{2048, 4096, 1105}, // fit 1024x2048, then 768x1536: 6 tiles
		{512, 512, 255},    // one tile
		{100, 80, 255},     // small images are not scaled up
		{768, 2048, 1445},  // the most an image costs: 2x4 tiles
		{513, 200, 425},    // two tiles
		{0, 10, unknownImageTokens},
	} {
		require.Equal(t, c.tokens, imageTokens(c.w, c.h), "%dx%d", c.w, c.h)
	}
}

func pngURL(t *testing.T, w, h int) string {
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))))
	return dataURL("image/png", b.Bytes())
}

func TestImageURLTokensReadsTheDimensions(t *testing.T) {
	require.Equal(t, 765, imageURLTokens(pngURL(t, 1024, 1024)))
	require.Equal(t, 255, imageURLTokens(pngURL(t, 10, 10)))
	require.Equal(t, unknownImageTokens, imageURLTokens(dataURL("image/webp", []byte("RIFF....WEBP"))), "unknown format")
	require.Equal(t, unknownImageTokens, imageURLTokens("https://example.com/cat.png"), "not a data: URL")
}

func TestDocumentTokens(t *testing.T) {
	pdf := "%PDF-1.4\n1 0 obj << /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >> endobj\n" +
		"2 0 obj << /Type /Page /Parent 1 0 R >> endobj\n3 0 obj <</Type/Page/Parent 1 0 R>> endobj\n" +
		"4 0 obj << /Type /PageLabel >> endobj\n"
	require.Equal(t, 2*pdfPageTokens, documentTokens(dataURL("application/pdf", []byte(pdf))), "two page objects")
	hidden := "%PDF-1.7\n" + strings.Repeat("x", 4000) // pages in compressed streams: not countable
	require.Equal(t, len(hidden)/contract.BytesPerToken, documentTokens(dataURL("application/pdf", []byte(hidden))))
}

func TestRequestTokensCountsWhatIsSent(t *testing.T) {
	req := llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: strings.Repeat("s", 400)},                                    // 100 + 4
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "n", Arguments: "{}"}}}, // 5 bytes + 4
			{Role: llm.RoleTool, ToolCallID: "c1", Content: strings.Repeat("t", 40)},                     // 10 + 4
			{Role: llm.RoleUser, Parts: []llm.Part{
				{Type: "text", Text: strings.Repeat("u", 80)}, // 20
				{Type: "image_url", ImageURL: pngURL(t, 1024, 1024)},
				{Type: "file", FileName: "a.pdf", FileData: dataURL("application/pdf", []byte("/Type /Page "))},
			}}, // 4 + 765 + 1500, 5 bytes of name
		},
	}
	require.Equal(t, (400+5+40+80+5+3)/4+4*4+765+pdfPageTokens, requestTokens(req))
	withTools := req
	withTools.Tools = []llm.Tool{{Name: "paint", Description: "d", Parameters: map[string]any{"type": "object"}}}
	withTools.JSONSchema = map[string]any{"type": "object"}
	require.Equal(t, requestTokens(req)+(5+1+17+17+3)/4, requestTokens(withTools), "tools and the answer's schema count")
}

func TestCutTextKeepsRunesWhole(t *testing.T) {
	require.Equal(t, "h", cutText("héllo", 2))
	require.Equal(t, "hé", cutText("héllo", 3))
	require.Equal(t, "héllo", cutText("héllo", 99))
	require.Equal(t, "", cutText("日本", 2))
}

func TestCapForCutsTheLargestFirst(t *testing.T) {
	// Costs are min(size, cap+note): 100 + (390+10) = 500.
	require.Equal(t, 390, capFor([]int{100, 1000}, []int{10, 10}, 500))
	require.Equal(t, 1000, capFor([]int{100, 1000}, []int{10, 10}, 5000), "room for everything")
	require.Equal(t, 0, capFor([]int{100, 1000}, []int{10, 10}, 5), "no room at all")
	require.Equal(t, 0, capFor(nil, nil, -10))
}

// conversation is a system message, entries of n bytes of text, and a
// newest input that pastes a file.
func conversation(entries, n int, file string) (llm.Request, []int) {
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: "Be brief."}}}
	var idx []int
	for i := 0; i < entries; i++ {
		role := llm.RoleUser
		if i%2 == 1 {
			role = llm.RoleAssistant
		}
		idx = append(idx, len(req.Messages))
		req.Messages = append(req.Messages, llm.Message{Role: role, Content: strings.Repeat(string(rune('a'+i%26)), n)})
	}
	idx = append(idx, len(req.Messages))
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
		{Type: "text", Text: "summarise it\n\n[attached: task://log.txt (text/plain, 1 bytes)]"},
		pastedPart("task://log.txt", []byte(file)),
	}})
	return req, idx
}

func TestARequestThatFitsIsSentAsBuilt(t *testing.T) {
	req, idx := conversation(4, 100, "short")
	got, f := fitRequest(req, idx, 10_000, 0)
	require.Equal(t, req, got)
	require.Equal(t, f.Full, f.Tokens)
	require.Zero(t, f.Dropped)
	require.Empty(t, f.Cut)
}

func TestALargeFileIsCutWithANote(t *testing.T) {
	file := "START " + strings.Repeat("x", 600_000) + " END"
	req, idx := conversation(2, 100, file)
	before := req.Messages[3].Parts[1].Text
	got, f := fitRequest(req, idx, 10_000, 0)
	require.LessOrEqual(t, f.Tokens, 10_000)
	require.Greater(t, f.Tokens, 10_000-4, "the file takes the room there is")
	require.Equal(t, requestTokens(got), f.Tokens)
	require.Equal(t, []string{"task://log.txt"}, f.Cut)
	require.Zero(t, f.Dropped, "a few entries fit beside the file")
	text := got.Messages[3].Parts[1].Text
	require.True(t, strings.HasPrefix(text, "[task://log.txt]\nSTART xxx"))
	require.NotContains(t, text, "END")
	shown := strings.Index(text, "\n[task://log.txt: cut here") - len("[task://log.txt]\n")
	require.Equal(t, "[task://log.txt]\n"+file[:shown]+"\n"+cutNote("task://log.txt", shown, len(file)), text, "the file's start, then the note")
	require.Contains(t, text, "[task://log.txt: cut here: showing the first ")
	require.Contains(t, text, " of 600010 bytes; the rest did not fit the model's context window]")
	require.Equal(t, before, req.Messages[3].Parts[1].Text, "the built request is left as it was")
	require.Len(t, got.Messages[3].Parts, 2)
}

func TestTheLargestFileIsCutFirst(t *testing.T) {
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
		pastedPart("task://small.txt", []byte(strings.Repeat("s", 4_000))),
		pastedPart("task://big.txt", []byte(strings.Repeat("b", 40_000))),
	}}}}
	got, f := fitRequest(req, []int{0}, 5_000, 0)
	require.LessOrEqual(t, f.Tokens, 5_000)
	require.Equal(t, []string{"task://big.txt"}, f.Cut)
	require.Equal(t, req.Messages[0].Parts[0].Text, got.Messages[0].Parts[0].Text, "the small file stays whole")
}

func TestAFileIsCutAtARuneBoundary(t *testing.T) {
	req, idx := conversation(0, 0, strings.Repeat("é", 10_000))
	for limit := 200; limit < 210; limit++ {
		got, f := fitRequest(req, idx, limit, 0)
		require.LessOrEqual(t, f.Tokens, limit)
		require.True(t, utf8.ValidString(got.Messages[1].Parts[1].Text))
	}
}

// A long conversation does not leave a file just referenced with nothing:
// the files keep a quarter of the limit and the oldest entries make room.
func TestOldEntriesMakeRoomForTheFilesShare(t *testing.T) {
	req, idx := conversation(100, 400, strings.Repeat("f", 100_000)) // 100 entries of 100 tokens
	got, f := fitRequest(req, idx, 10_000, 0)
	require.LessOrEqual(t, f.Tokens, 10_000)
	require.Greater(t, f.Dropped, 20)
	require.Less(t, f.Dropped, 100)
	require.Len(t, got.Messages, len(req.Messages)-f.Dropped)
	require.Equal(t, req.Messages[idx[f.Dropped]], got.Messages[1], "the oldest are left out, in order")
	text := got.Messages[len(got.Messages)-1].Parts[1].Text
	require.GreaterOrEqual(t, len(text), 10_000/fileShare*contract.BytesPerToken-200, "the file keeps its share")
}

func TestWhatCannotFitKeepsOnlyTheNewestEntry(t *testing.T) {
	req, idx := conversation(6, 400, "tiny")
	last := &req.Messages[len(req.Messages)-1]
	last.Parts = append(last.Parts, llm.Part{Type: "image_url", ImageURL: pngURL(t, 1024, 1024)})
	got, f := fitRequest(req, idx, 500, 0) // the image alone is 765 tokens
	require.Equal(t, 6, f.Dropped, "every entry but the newest")
	require.Len(t, got.Messages, 2)
	require.Greater(t, f.Tokens, 500, "sent over the limit: the provider has the last word")
	require.Equal(t, "[task://log.txt]\ntiny", got.Messages[1].Parts[1].Text, "cutting a file shorter than its note saves nothing")
}

// The inputs a call commits are never left out to fit the context (docs/contract.md:
// their committed_at says the model was shown them); older entries are.
func TestTheCommittedInputsAreNeverLeftOut(t *testing.T) {
	req, idx := conversation(20, 4_000, "short") // 20 entries of ~1,000 tokens
	got, f := fitRequest(req, idx, 5_000, 0)
	require.Greater(t, f.Dropped, 10, "without a bound on what may go, most of the conversation is left out")
	got, f = fitRequest(req, idx, 5_000, 12)
	require.Equal(t, len(idx)-12, f.Dropped, "only the entries before the last 12 are left out, though the request stays over the limit")
	require.Greater(t, f.Tokens, 5_000)
	last := got.Messages[len(got.Messages)-12:]
	require.Equal(t, req.Messages[len(req.Messages)-12:], last)
}
