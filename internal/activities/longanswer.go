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

// A long answer of an agent with a mount becomes a file (docs/content.md: long
// text goes by reference). An answer whose text is over one inline part
// (contract.MaxInlineTextBytes) is written to the task's space as
// answers/turn-<turn>-<sha256[:12]>.txt, and the output holds the start of
// the text, a line naming the file, then the file part (size and sha256
// recorded). The name carries the text's hash, so a retried attempt with the
// same answer writes the same object and a different answer never replaces
// one an output already references.
//
// Without a mount there is nowhere to put it, and docs/content.md says oversized
// text is refused, never transformed: it is not split into parts (as it
// was) nor cut. The turn refuses the answer the way it refuses one that
// does not fit the schema (model_steps.go): the model is told the answer's size
// and the limit and asked again for a shorter one, at most
// structuredAttempts calls in the turn; past them the turn fails with a
// non-retryable MODEL_ERROR that names the limit, the size and the fixes
// (a mount, a lower maxTokens, shorter answers asked for). The earlier
// answer is not sent back (it is the oversized thing, and would crowd the
// context window): a short placeholder stands in its place.

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

// textMessage is an answer's text as an output's message: one part, the
// text whole (never split: an answer over one part is refused, overInline).
func textMessage(text string) []contract.ContentPart {
	return []contract.ContentPart{contract.TextPart(text)}
}

// overInline is the bytes of out's text when one of its parts is over the
// inline budget, 0 otherwise. An agent with a mount never has such an
// output (longAnswerToFile made the text a file).
func overInline(out contract.TaskIO) int {
	for _, p := range out.Message {
		if p.Text != nil && len(*p.Text) > contract.MaxInlineTextBytes {
			return len(*p.Text)
		}
	}
	return 0
}

// tooLongCorrection is what the model is told of an answer over the
// inline budget.
func tooLongCorrection(a *contract.Agent, n int) string {
	shape := "Answer again, shorter"
	if a.Spec.JSON || structured(a) {
		shape = "Answer again in the same form, shorter"
	}
	return fmt.Sprintf("Your answer was refused: it was %d bytes, and one message holds at most %d bytes of text (this agent has no file storage for longer answers). %s: at most %d bytes of text. Summarise or leave out detail rather than stopping mid-way.",
		n, contract.MaxInlineTextBytes, shape, contract.MaxInlineTextBytes)
}

// tooLongFailure is the turn's error when every call's answer was over the
// inline budget.
func tooLongFailure(calls, n int) string {
	return fmt.Sprintf("the model's answer was over the %d-byte inline budget of one message after %d calls (the last: %d bytes), and this agent has no mount to write a long answer to; text is never split or cut (seed 001): give the agent a mount (a long answer then goes to a file), lower its maxTokens, or ask it for shorter answers",
		contract.MaxInlineTextBytes, calls, n)
}
