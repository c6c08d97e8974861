package activities

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif" // image.DecodeConfig reads these three
	_ "image/jpeg"
	_ "image/png"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/llm"
)

// The window picks entries by their stored size, which does not see what a
// request adds: the filled instructions, collected values, the capability
// exchange and, above all, the content of files. So once the request is
// built it is counted as the provider counts it and, when it is over the
// model's context, cut to fit: pasted text files first (the largest cut
// most), then the oldest entries of the window (never the newest).

const (
	// messageTokens is each message's framing (role, separators): OpenAI
	// counts 3 a message and 3 a request to prime the answer, which 4 a
	// message covers from 3 messages on.
	messageTokens = 4
	// unknownImageTokens is an image whose size cannot be read (not png,
	// jpeg or gif): OpenAI's example of a 2048x4096 image at high detail.
	unknownImageTokens = 1105
	// pdfPageTokens is one PDF page: the provider shows the model an image
	// of the page (765 tokens for a page scaled to 768x1024 at high detail)
	// and its text (about 735 tokens for a full page).
	pdfPageTokens = 1500
	// fileShare: pasted files keep 1/fileShare of the limit between them
	// before older entries are left out to make room.
	fileShare = 4
	// maxShrinks bounds the times a turn shrinks its request after the
	// provider refused one as over the model's context.
	maxShrinks = 3
)

// tally is what part of a request costs: bytes of text, and tokens counted
// otherwise (images, documents, the framing of messages).
type tally struct{ text, tokens int }

func (s tally) plus(o tally) tally  { return tally{s.text + o.text, s.tokens + o.tokens} }
func (s tally) minus(o tally) tally { return tally{s.text - o.text, s.tokens - o.tokens} }

// count is the tally in tokens: text at contract.BytesPerToken bytes a token, as the window counts.
func (s tally) count() int {
	return (s.text+contract.BytesPerToken-1)/contract.BytesPerToken + s.tokens
}

// contextLimit is how many tokens one request may send: the model's
// context less the room kept for the answer (maxTokens, or an eighth when
// the agent sets none), as contract.AgentSpec.ContextBudgetBytes reasons.
func contextLimit(s contract.AgentSpec) int {
	ctx := s.ContextTokens
	if ctx == 0 {
		ctx = contract.DefaultContextTokens
	}
	if s.MaxTokens == 0 {
		return ctx - ctx/8
	}
	return max(1, ctx-s.MaxTokens)
}

// messageSize counts one message: its text, the calls it makes, its images
// and documents.
func messageSize(m llm.Message) tally {
	s := tally{text: len(m.Content), tokens: messageTokens}
	for _, tc := range m.ToolCalls {
		s.text += len(tc.ID) + len(tc.Name) + len(tc.Arguments)
	}
	for _, p := range m.Parts {
		switch p.Type {
		case "image_url":
			s.tokens += imageURLTokens(p.ImageURL)
		case "file":
			s.text += len(p.FileName)
			s.tokens += documentTokens(p.FileData)
		default:
			s.text += len(p.Text)
		}
	}
	return s
}

// fixedSize counts what a request sends besides its messages: the tools
// offered and the answer's schema.
func fixedSize(req llm.Request) tally {
	var s tally
	for _, t := range req.Tools {
		b, _ := json.Marshal(t.Parameters)
		s.text += len(t.Name) + len(t.Description) + len(b)
	}
	if req.JSONSchema != nil {
		b, _ := json.Marshal(req.JSONSchema)
		s.text += len(b)
	}
	return s
}

// requestTokens is a request's size in tokens.
func requestTokens(req llm.Request) int {
	s := fixedSize(req)
	for _, m := range req.Messages {
		s = s.plus(messageSize(m))
	}
	return s.count()
}

// imageTokens is OpenAI's published cost of an image at high detail: scaled
// to fit 2048x2048, then down so its shortest side is at most 768, then 170
// tokens per 512x512 tile plus 85.
func imageTokens(w, h int) int {
	if w <= 0 || h <= 0 {
		return unknownImageTokens
	}
	fw, fh := float64(w), float64(h)
	if long := max(fw, fh); long > 2048 {
		fw, fh = fw*2048/long, fh*2048/long
	}
	if short := min(fw, fh); short > 768 {
		fw, fh = fw*768/short, fh*768/short
	}
	tiles := func(x float64) int { return int((x + 511) / 512) }
	return 170*tiles(fw)*tiles(fh) + 85
}

// imageURLTokens reads the dimensions from a data: URL's header.
func imageURLTokens(url string) int {
	payload, ok := base64Payload(url)
	if !ok {
		return unknownImageTokens
	}
	cfg, _, err := image.DecodeConfig(base64.NewDecoder(base64.StdEncoding, strings.NewReader(payload)))
	if err != nil {
		return unknownImageTokens
	}
	return imageTokens(cfg.Width, cfg.Height)
}

// pdfPage matches a page object (not the /Pages tree) where the file
// leaves it uncompressed.
var pdfPage = regexp.MustCompile(`/Type\s*/Page(?:[^A-Za-z]|$)`)

// documentTokens estimates a PDF: pdfPageTokens a page when its pages can be
// counted, else its bytes as if they were text (an overestimate: a file
// that hides its pages in compressed streams may be mostly images).
func documentTokens(url string) int {
	payload, ok := base64Payload(url)
	if !ok {
		return len(url) / contract.BytesPerToken
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return len(payload) / contract.BytesPerToken
	}
	if pages := len(pdfPage.FindAllIndex(data, -1)); pages > 0 {
		return pages * pdfPageTokens
	}
	return len(data) / contract.BytesPerToken
}

func base64Payload(url string) (string, bool) {
	if !strings.HasPrefix(url, "data:") {
		return "", false
	}
	_, payload, ok := strings.Cut(url, ";base64,")
	return payload, ok
}

// A pasted text file is a text part whose FileName holds its reference
// (pastedPart); its text is "[ref]\n" and the file's content.
func pastedPart(ref string, data []byte) llm.Part {
	return llm.Part{Type: "text", Text: pastedHead(ref) + string(data), FileName: ref}
}

func pastedHead(ref string) string { return "[" + ref + "]\n" }

// cutNote tells the model a file was cut, and where.
func cutNote(ref string, shown, total int) string {
	return fmt.Sprintf("[%s: cut here: showing the first %d of %d bytes; the rest did not fit the model's context window]", ref, shown, total)
}

// cutText keeps at most n bytes of s, ending at a UTF-8 boundary.
func cutText(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// capFor is the longest a file may stay so that the files fit budget bytes
// together: the largest c for which every file of size[i] bytes costs
// min(size[i], c+note[i]) (cut to c with its note, unless whole is
// smaller) and the costs add up to at most budget. So the largest files are
// cut first and most. 0 when even that does not fit.
func capFor(sizes, notes []int, budget int) int {
	cost := func(c int) int {
		n := 0
		for i, s := range sizes {
			n += min(s, c+notes[i])
		}
		return n
	}
	lo, hi := 0, 0
	for _, s := range sizes {
		hi = max(hi, s)
	}
	for lo < hi { // the largest c in [lo, hi] with cost(c) <= budget
		mid := (lo + hi + 1) / 2
		if cost(mid) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// fitted says how a request was made to fit.
type fitted struct {
	Tokens  int      // the request sent
	Full    int      // the request as built
	Dropped int      // oldest window entries left out
	Cut     []string // references of the files cut
}

// pasted locates one pasted file in a request.
type pasted struct {
	msg, part int
	ref, body string
	note      int // bytes its cut note may take
}

func pastedFiles(req llm.Request) []pasted {
	var out []pasted
	for i, m := range req.Messages {
		for j, p := range m.Parts {
			if head := pastedHead(p.FileName); p.Type == "text" && p.FileName != "" && strings.HasPrefix(p.Text, head) {
				body := p.Text[len(head):]
				out = append(out, pasted{msg: i, part: j, ref: p.FileName, body: body,
					note: len("\n" + cutNote(p.FileName, len(body), len(body)))})
			}
		}
	}
	return out
}

// fitRequest makes req fit limit tokens. entries are the indexes in
// req.Messages of the window's entries, oldest first. Pasted files are cut
// first, but while older entries remain they keep a quarter of the limit
// between them: a file just referenced is not cut to nothing to keep a long
// conversation's oldest turns. Past that, the oldest entries are left out,
// one at a time down to the newest, and the files that remain are cut to
// the room left. A request that cannot fit is returned at its smallest: the
// provider has the last word. req is not changed.
// keep is how many of the newest entries must stay (at least one): the
// inputs the call commits, which the model must be shown (docs/contract.md).
func fitRequest(req llm.Request, entries []int, limit, keep int) (llm.Request, fitted) {
	fixed := fixedSize(req)
	sizes := make([]tally, len(req.Messages))
	total := fixed
	for i, m := range req.Messages {
		sizes[i] = messageSize(m)
		total = total.plus(sizes[i])
	}
	f := fitted{Tokens: total.count(), Full: total.count()}
	if f.Tokens <= limit {
		return req, f
	}
	files := pastedFiles(req)
	share := capFor(bodyLens(files), noteLens(files), limit/fileShare*contract.BytesPerToken)
	// Leave out the oldest entries while the request does not fit with the
	// files cut to their share.
	shared := append([]tally(nil), sizes...)
	for _, p := range files {
		shared[p.msg].text -= len(p.body) - min(len(p.body), share+p.note)
	}
	least := fixed
	for _, s := range shared {
		least = least.plus(s)
	}
	dropped := map[int]bool{}
	for ; least.count() > limit && f.Dropped < len(entries)-max(1, keep); f.Dropped++ {
		i := entries[f.Dropped]
		dropped[i] = true
		least = least.minus(shared[i])
	}
	// Cut the files that remain to the room left.
	rest := fixed
	for i, s := range sizes {
		if !dropped[i] {
			rest = rest.plus(s)
		}
	}
	var kept []pasted
	for _, p := range files {
		if !dropped[p.msg] {
			kept = append(kept, p)
			rest.text -= len(p.body)
		}
	}
	c := capFor(bodyLens(kept), noteLens(kept), (limit-rest.tokens)*contract.BytesPerToken-rest.text)
	cuts := map[[2]int]string{}
	for _, p := range kept {
		if c+p.note < len(p.body) {
			shown := cutText(p.body, c)
			cuts[[2]int{p.msg, p.part}] = pastedHead(p.ref) + shown + "\n" + cutNote(p.ref, len(shown), len(p.body))
			f.Cut = append(f.Cut, p.ref)
		}
	}
	out := req
	out.Messages = make([]llm.Message, 0, len(req.Messages)-f.Dropped)
	for i, m := range req.Messages {
		if dropped[i] {
			continue
		}
		copied := false
		for j := range m.Parts {
			if text, ok := cuts[[2]int{i, j}]; ok {
				if !copied { // req's parts stay as they were
					m.Parts, copied = append([]llm.Part(nil), m.Parts...), true
				}
				m.Parts[j].Text = text
			}
		}
		out.Messages = append(out.Messages, m)
	}
	f.Tokens = requestTokens(out)
	return out, f
}

func bodyLens(ps []pasted) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = len(p.body)
	}
	return out
}

func noteLens(ps []pasted) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.note
	}
	return out
}
