package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agenttask/agenttask/contract"
)

// A long answer of an agent with a mount becomes a file (seed 001: long
// text goes by reference). An answer whose text is over one inline part
// (contract.MaxInlineTextBytes) is written to the task's space as
// answers/turn-<turn>-<sha256[:12]>.txt, and the output holds the start of
// the text, a line naming the file, then the file part (size and sha256
// recorded). The name carries the text's hash, so a retried attempt with the
// same answer writes the same object and a different answer never replaces
// one an output already references. Without a mount the text stays inline,
// split into parts.

// longAnswerPreview is how much of a long answer stays inline.
const longAnswerPreview = 2_000

func (a *Activities) longAnswerToFile(ctx context.Context, agent *contract.Agent, in ModelTurnInput, out contract.TaskIO) (contract.TaskIO, error) {
	text := contract.TextOf(out)
	if agent.Spec.Mount == nil || a.Files == nil || len(text) <= contract.MaxInlineTextBytes {
		return out, nil
	}
	m, err := a.mountOf(*agent.Spec.Mount)
	if err != nil {
		return out, final(err)
	}
	sum := sha256.Sum256([]byte(text))
	path := fmt.Sprintf("answers/turn-%d-%s.txt", in.Turn, hex.EncodeToString(sum[:])[:12])
	part, o, err := a.Files.Upload(ctx, m, in.Task(), path, "text/plain", strings.NewReader(text))
	if err != nil {
		return out, storageError("writing the long answer to "+path, err)
	}
	if part, err = recordObject(part, o); err != nil {
		return out, err
	}
	preview := text[:longAnswerPreview]
	for !utf8.ValidString(preview) {
		preview = preview[:len(preview)-1]
	}
	note := fmt.Sprintf("%s…\n\n[The whole answer, %d bytes, is in %s.]", preview, len(text), *part.File)
	msg := []contract.ContentPart{contract.TextPart(note), part}
	for _, p := range out.Message {
		if p.File != nil { // the answer's own attachments follow
			msg = append(msg, p)
		}
	}
	out.Message = msg
	return out, nil
}
