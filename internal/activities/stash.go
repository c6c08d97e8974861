package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/transcript"
)

// Stash activities carry what is too large to travel inline (a
// continue-as-new argument, a large agent spec) by reference: the workflow
// cuts the JSON into parts of at most StashPartBytes, each stored beside the
// task's transcript by its own StashPut, and passes a StashRef instead.
// Every payload stays far below Temporal's 2 MiB limit (and its 512 KiB
// warning) whatever the size of the whole.
const (
	StashPutName = "StashPut"
	StashGetName = "StashGet"

	// StashPartBytes bounds one part (a JSON string in the activity's
	// argument or result: escaping at most doubles it).
	StashPartBytes = 128 << 10
)

// StashRef names a value stored in parts beside a transcript.
type StashRef struct {
	Transcript TranscriptKey `json:"transcript"`
	Name       string        `json:"name"`
	Parts      int           `json:"parts"`
	Bytes      int           `json:"bytes"`
	SHA256     string        `json:"sha256"`
}

// PartName is the stash name of part i.
func (r StashRef) PartName(i int) string { return fmt.Sprintf("%s.%d", r.Name, i) }

// StashPutInput stores one part.
type StashPutInput struct {
	Transcript TranscriptKey `json:"transcript"`
	Name       string        `json:"name"`
	Data       string        `json:"data"`
}

// StashGetInput reads one part.
type StashGetInput struct {
	Transcript TranscriptKey `json:"transcript"`
	Name       string        `json:"name"`
}

// SplitStash cuts data into parts of at most StashPartBytes, never inside a
// UTF-8 sequence (each part travels as a JSON string), and returns the
// reference that names them.
func SplitStash(k TranscriptKey, name string, data []byte) (StashRef, []string) {
	sum := sha256.Sum256(data)
	var parts []string
	for len(data) > 0 {
		n := min(StashPartBytes, len(data))
		for n < len(data) && n > 0 && !utf8.RuneStart(data[n]) {
			n--
		}
		parts = append(parts, string(data[:n]))
		data = data[n:]
	}
	ref := StashRef{Transcript: k, Name: name, Parts: len(parts), SHA256: hex.EncodeToString(sum[:])}
	for _, p := range parts {
		ref.Bytes += len(p)
	}
	return ref, parts
}

// JoinStash reassembles parts read back and checks them against ref.
func JoinStash(ref StashRef, parts []string) ([]byte, error) {
	data := []byte(strings.Join(parts, ""))
	sum := sha256.Sum256(data)
	if len(data) != ref.Bytes || hex.EncodeToString(sum[:]) != ref.SHA256 {
		return nil, fmt.Errorf("stash %q: read %d bytes that do not match the %d stored (sha256 %s)", ref.Name, len(data), ref.Bytes, ref.SHA256)
	}
	return data, nil
}

// StashPut stores one part once: a retried or repeated put keeps the first.
// A run writes the same data under a name however often it retries, so a
// part that differs was stored by another run: one that a reset replaced,
// which continued as new from the same run number (carry-RUN.N) with a
// state of its own. That part gives way (transcript.PerRun; a part is a
// JSON string, which records no writer).
func (a *Activities) StashPut(ctx context.Context, in StashPutInput) error {
	var stored string
	if _, err := a.Transcript.PutOnce(transcript.PerRun(ctx), in.Transcript, in.Name, in.Data, &stored); err != nil {
		return err // storage unavailable: retried
	}
	return nil
}

// StashGet reads one part. A part that does not exist can never appear:
// that failure is final.
func (a *Activities) StashGet(ctx context.Context, in StashGetInput) (string, error) {
	var s string
	if err := a.Transcript.GetOnce(ctx, in.Transcript, in.Name, &s); err != nil {
		if errors.Is(err, transcript.ErrNotFound) {
			return "", temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrInternal, err)
		}
		return "", err
	}
	return s, nil
}

// readStash reads every part of ref (cached: parts never change).
func (a *Activities) readStash(ctx context.Context, ref StashRef) ([]byte, error) {
	parts := make([]string, ref.Parts)
	for i := range parts {
		if err := a.Transcript.GetOnce(ctx, ref.Transcript, ref.PartName(i), &parts[i]); err != nil {
			return nil, err
		}
	}
	return JoinStash(ref, parts)
}

// agentSpec is the agent a call runs: inline, or read from the stash when
// the workflow passed it by reference (AgentRef).
func (a *Activities) agentSpec(ctx context.Context, inline contract.AgentSpec, ref *StashRef) (contract.AgentSpec, error) {
	if ref == nil {
		return inline, nil
	}
	data, err := a.readStash(ctx, *ref)
	if err != nil {
		return contract.AgentSpec{}, storageError("reading the agent spec", err)
	}
	var spec contract.AgentSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return contract.AgentSpec{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("the agent spec stored as %q: %v", ref.Name, err), contract.ErrInternal, err)
	}
	return spec, nil
}
