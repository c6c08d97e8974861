package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/guard"
	"github.com/agenttask/agenttask/internal/mount"
)

// Metadata keys the runtime writes on a file part when it checks the object:
// what a later model request compares to notice a changed object.
const (
	MetaSHA256  = "sha256"
	MetaStorage = "storage" // {"md5"?, "etag"?, "modTime"}
)

// Refusals that come back to the caller as they are (not retried).
var finalTypes = map[string]bool{
	contract.ErrInvalidInput: true, contract.ErrGuardrail: true,
	mount.ErrFileNotFound: true, mount.ErrFileChanged: true,
}

// CheckInput states every file part of an input in the task's mount, records
// its size and sha256 on the part (what the caller claimed is replaced), and
// runs the agent's guardrails with the committed conversation as `context`.
func (a *Activities) CheckInput(ctx context.Context, in CheckInputInput) (*CheckInputResult, error) {
	if in.AgentRef != nil { // a large spec travels by reference (stash.go)
		spec, err := a.agentSpec(ctx, in.Agent, in.AgentRef)
		if err != nil {
			return nil, a.waitOut(ctx, in.Retry, err)
		}
		in.Agent = spec
	}
	res, err := a.checkInput(ctx, in)
	return res, a.waitOut(ctx, in.Retry, err)
}

func (a *Activities) checkInput(ctx context.Context, in CheckInputInput) (*CheckInputResult, error) {
	ctx, stop := heartbeating(ctx)
	defer stop()
	out := in.Input
	out.Message = append([]contract.ContentPart(nil), in.Input.Message...)
	for i, p := range out.Message {
		if p.File == nil {
			continue
		}
		checked, err := a.statPart(ctx, in.Agent, in.Task(), p)
		if err != nil {
			var se *contract.Error
			if !errors.As(err, &se) {
				return nil, storageError("checking "+*p.File, err)
			}
			return nil, final(err)
		}
		out.Message[i] = checked
	}
	if len(in.Agent.Guardrails) > 0 {
		var gctx guard.Context
		if guard.AnyReadsContext(in.Agent.Guardrails) {
			if err := a.persist(ctx, in.Transcript, in.Entries); err != nil {
				return nil, err
			}
			var err error
			if gctx, err = a.conversation(ctx, in.Transcript, in.End); err != nil {
				return nil, err
			}
		}
		if err := guard.EvaluateGuardrails(guard.FromSpec(in.Agent.Guardrails), out.Message, gctx); err != nil {
			return nil, final(err)
		}
	}
	return &CheckInputResult{Input: out}, nil
}

// statPart checks one file part and records the object on it.
func (a *Activities) statPart(ctx context.Context, spec contract.AgentSpec, taskID string, p contract.ContentPart) (contract.ContentPart, error) {
	if spec.Mount == nil || a.Files == nil {
		return p, contract.Invalid("%s: this agent has no mount", *p.File)
	}
	path, err := mount.ParseRef(spec.Mount.Root, *p.File)
	if err != nil {
		return p, err
	}
	m, err := a.mountOf(*spec.Mount)
	if err != nil {
		return p, err
	}
	o, err := a.Files.Stat(ctx, m, taskID, path, func(int64) { activity.RecordHeartbeat(ctx) })
	if err != nil {
		return p, err
	}
	return recordObject(p, o)
}

// recordObject sets sizeBytes and the runtime's metadata from the object.
func recordObject(p contract.ContentPart, o mount.Object) (contract.ContentPart, error) {
	size := o.Size
	p.SizeBytes = &size
	meta := map[string]any{}
	if len(p.Metadata) > 0 {
		_ = json.Unmarshal(p.Metadata, &meta)
	}
	meta[MetaSHA256] = o.SHA256
	storage := map[string]any{"modTime": o.ModTime.UTC().Format(time.RFC3339Nano)}
	if o.MD5 != "" {
		storage["md5"] = o.MD5
	}
	if o.ETag != "" {
		storage["etag"] = o.ETag
	}
	meta[MetaStorage] = storage
	b, _ := json.Marshal(meta)
	if len(b) > contract.MaxMetadataBytes {
		return p, contract.Invalid("%s: metadata plus the runtime's checksum is %d bytes, over the %d-byte limit; send less metadata", *p.File, len(b), contract.MaxMetadataBytes)
	}
	p.Metadata = b
	return p, nil
}

// objectOf reads back what statPart recorded on a part.
func objectOf(spec contract.AgentSpec, p contract.ContentPart) (mount.Object, error) {
	path, err := mount.ParseRef(spec.Mount.Root, *p.File)
	if err != nil {
		return mount.Object{}, err
	}
	var meta struct {
		SHA256  string `json:"sha256"`
		Storage struct {
			MD5     string    `json:"md5"`
			ETag    string    `json:"etag"`
			ModTime time.Time `json:"modTime"`
		} `json:"storage"`
	}
	if err := json.Unmarshal(p.Metadata, &meta); err != nil || meta.SHA256 == "" || p.SizeBytes == nil {
		return mount.Object{}, fmt.Errorf("%s was never checked by the runtime", *p.File)
	}
	return mount.Object{Path: path, Size: *p.SizeBytes, SHA256: meta.SHA256, MD5: meta.Storage.MD5, ETag: meta.Storage.ETag, ModTime: meta.Storage.ModTime}, nil
}

// conversation builds the guard context: the committed entries [0, end).
func (a *Activities) conversation(ctx context.Context, k TranscriptKey, end int) (guard.Context, error) {
	var gc guard.Context
	if end == 0 {
		return gc, nil
	}
	entries, err := a.Transcript.Read(ctx, k, 0, end)
	if err != nil {
		return gc, storageError("reading the conversation", err)
	}
	for _, m := range entries {
		if m.Type == contract.TypeOutput {
			gc.Output = append(gc.Output, m.TaskIO)
		} else {
			gc.Input = append(gc.Input, m.TaskIO)
		}
	}
	return gc, nil
}

// mountOf is the storage a mount spec names: one the operator configured
// (AGENT_MOUNTS), by name or by an equal URL. Anything else is refused here
// too, whatever the workflow checked: tasks started on older rules, or by a
// caller who wrote their own history, never reach unlisted storage.
func (a *Activities) mountOf(m contract.MountSpec) (mount.Spec, error) {
	return a.Mounts.Resolve("agent.mount", m)
}

// final turns a typed refusal into a non-retryable activity error.
func final(err error) error {
	var se *contract.Error
	if errors.As(err, &se) && finalTypes[se.Type] {
		return temporal.NewNonRetryableApplicationError(se.Message, se.Type, nil)
	}
	return err
}

// CopyProgress is CopyFiles' heartbeat details, which the Web UI shows in a
// task's Pending Activities (Last Heartbeat Details): the file being copied
// and its bytes done, and the files and bytes of those done before.
type CopyProgress struct {
	File      string `json:"file"`       // the reference being copied
	FileBytes int64  `json:"file_bytes"` // its bytes copied so far
	FileSize  int64  `json:"file_size"`  // its size
	FilesDone int    `json:"files_done"`
	Files     int    `json:"files"`      // parts asked for (those without a file are skipped)
	BytesDone int64  `json:"bytes_done"` // bytes of the files done
}
