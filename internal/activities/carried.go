package activities

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/mount"
	"github.com/agenttask/agenttask/internal/transcript"
)

// A rescued or resumed task starts by copying every file its carried
// conversation references into its own space (docs/content.md: content crossing a
// task boundary is copied into the recipient's mount and re-referenced).
// The conversation's entries stay where they are, in the earlier task's
// transcript; what changes is where their files are read from, recorded once
// beside the new task's transcript and applied by each of its model turns.

// CarriedName names, beside a continuation's transcript, where the files of
// its carried conversation went.
const CarriedName = "carried-files"

// maxUnavailableListed bounds the references a CopyFilesResult lists.
const maxUnavailableListed = 20

// CarriedFile maps a file reference of the carried conversation (with the
// sha256 recorded when it was referenced) to its copy in the new task's
// space, or says why there is none.
type CarriedFile struct {
	Ref     string                `json:"ref"`
	SHA256  string                `json:"sha256"`
	Part    *contract.ContentPart `json:"part,omitempty"`
	Missing string                `json:"missing,omitempty"`
}

// carriedFiles indexes CarriedFile by reference and sha256.
type carriedFiles map[string]CarriedFile

func carriedKey(ref, sha string) string { return ref + "\x00" + sha }

func indexCarried(list []CarriedFile) carriedFiles {
	out := make(carriedFiles, len(list))
	for _, f := range list {
		out[carriedKey(f.Ref, f.SHA256)] = f
	}
	return out
}

// carry runs CopyFiles for a continuation: it records the transcript links,
// gathers the conversation's file parts, copies each into the new task's
// space and stores where each went.
func (a *Activities) carry(ctx context.Context, in CopyFilesInput) (*CopyFilesResult, error) {
	ctx, stop := heartbeating(ctx)
	defer stop()
	c := in.Carried
	// The new task's link lets tasks continuing it find this chain; the
	// source's is written here too in case it failed before writing it.
	for _, k := range []TranscriptKey{c.Source, c.Transcript} {
		if err := a.Transcript.WriteLink(ctx, k); err != nil {
			return nil, storageError("recording the transcript link", err)
		}
	}
	parts, err := a.conversationFiles(ctx, c.Transcript, c.End, in.Parts)
	if err != nil {
		return nil, err
	}
	// Where the continued task itself put the files it carried over.
	var sourceMoved carriedFiles
	if c.Source.Parent != nil {
		var list []CarriedFile
		err := a.Transcript.GetOnce(ctx, c.Source, CarriedName, &list)
		if err != nil && !errors.Is(err, transcript.ErrNotFound) {
			return nil, storageError("reading the files the continued task carried", err)
		}
		sourceMoved = indexCarried(list)
	}
	res := &CopyFilesResult{}
	var list []CarriedFile
	for _, p := range parts {
		f, err := a.carryOne(ctx, in, p, sourceMoved)
		if err != nil {
			return nil, err
		}
		list = append(list, f)
		if f.Part != nil {
			res.Carried++
		} else if len(res.Unavailable) < maxUnavailableListed {
			res.Unavailable = append(res.Unavailable, f.Ref)
		}
	}
	if list == nil {
		list = []CarriedFile{}
	}
	var stored []CarriedFile
	if _, err := a.Transcript.PutOnce(ctx, c.Transcript, CarriedName, list, &stored); err != nil {
		return nil, storageError("recording the carried files", err)
	}
	return res, nil
}

// conversationFiles lists the file parts of entries [0, end) and of extra,
// each reference (and content) once.
func (a *Activities) conversationFiles(ctx context.Context, k TranscriptKey, end int, extra []contract.ContentPart) ([]contract.ContentPart, error) {
	seen := map[string]bool{}
	var out []contract.ContentPart
	add := func(p contract.ContentPart) {
		if p.File == nil {
			return
		}
		key := carriedKey(*p.File, recordedSHA(p))
		if !seen[key] {
			seen[key] = true
			out = append(out, p)
		}
	}
	const chunk = 256
	for from := 0; from < end; from += chunk {
		entries, err := a.Transcript.Read(ctx, k, from, min(from+chunk, end))
		if err != nil {
			return nil, storageError("reading the carried conversation", err)
		}
		for _, m := range entries {
			for _, p := range m.Message {
				add(p)
			}
		}
		activity.RecordHeartbeat(ctx, from)
	}
	for _, p := range extra {
		add(p)
	}
	return out, nil
}

// carryOne copies one referenced object into the new task's space: from the
// first space that holds it with the recorded content, to the same path, or
// beside it when the new space already holds a different object there.
func (a *Activities) carryOne(ctx context.Context, in CopyFilesInput, p contract.ContentPart, sourceMoved carriedFiles) (CarriedFile, error) {
	f := CarriedFile{Ref: *p.File, SHA256: recordedSHA(p)}
	if in.Dst.Root == "" || a.Files == nil {
		f.Missing = "this agent has no mount"
		return f, nil
	}
	m, err := a.mountOf(in.Dst)
	if err != nil {
		return f, final(err)
	}
	spec := contract.AgentSpec{Mount: &in.Dst}
	want, err := objectOf(spec, p)
	if err != nil {
		f.Missing = err.Error()
		return f, nil
	}
	beat := func(n int64) { activity.RecordHeartbeat(ctx, n) }
	f.Missing = "it is no longer in the continued task's space"
	for i, space := range in.Carried.Spaces {
		srcPath := want.Path
		if moved, ok := sourceMoved[carriedKey(f.Ref, f.SHA256)]; ok && i == 0 && moved.Part != nil {
			if srcPath, err = mount.ParseRef(in.Dst.Root, *moved.Part.File); err != nil {
				continue
			}
		}
		so, err := a.Files.Stat(ctx, m, space, srcPath, beat)
		switch t := contract.TypeOf(err); {
		case err == nil:
		case t == mount.ErrFileNotFound || t == mount.ErrFileChanged || t == contract.ErrInvalidInput:
			continue
		default:
			return f, storageError("reading "+f.Ref, err)
		}
		if so.SHA256 != want.SHA256 {
			f.Missing = "it changed after it was referenced"
			continue
		}
		dstPath, err := a.carriedPath(ctx, m, in.DstTask, want, beat)
		if err != nil {
			return f, err
		}
		do, err := a.Files.Copy(ctx, m, space, so, m, in.DstTask, dstPath, beat)
		if err != nil {
			if contract.TypeOf(err) != "" {
				f.Missing = contract.MessageOf(err)
				continue
			}
			return f, storageError("copying "+f.Ref, err)
		}
		ref := mount.FormatRef(in.Dst.Root, dstPath)
		q := p
		q.File = &ref
		checked, err := recordObject(q, do)
		if err != nil {
			f.Missing = contract.MessageOf(err)
			return f, nil
		}
		f.Part, f.Missing = &checked, ""
		return f, nil
	}
	return f, nil
}

// carriedPath is where a carried object goes in the new space: its own path,
// unless that already holds a different object (something uploaded to the
// new task before it started), then a folder named by its content.
func (a *Activities) carriedPath(ctx context.Context, m mount.Spec, task string, want mount.Object, beat func(int64)) (string, error) {
	cur, err := a.Files.Stat(ctx, m, task, want.Path, beat)
	switch t := contract.TypeOf(err); {
	case err == nil && cur.SHA256 != want.SHA256:
		return path.Join("carried-"+want.SHA256[:12], want.Path), nil
	case err == nil, t == mount.ErrFileNotFound:
		return want.Path, nil
	case t != "":
		return path.Join("carried-"+want.SHA256[:12], want.Path), nil
	default:
		return "", storageError("checking "+want.Path+" in this task's space", err)
	}
}

// recordedSHA is the sha256 the runtime recorded on a checked part ("" if none).
func recordedSHA(p contract.ContentPart) string {
	o, err := objectOf(contract.AgentSpec{Mount: &contract.MountSpec{Root: rootOf(p)}}, p)
	if err != nil {
		return ""
	}
	return o.SHA256
}

// rootOf is the root a reference names (the scheme of root://path).
func rootOf(p contract.ContentPart) string {
	if p.File == nil {
		return ""
	}
	root, _, _ := strings.Cut(*p.File, "://")
	return root
}

// loadCarried reads where a continuation's carried files went; nil for a
// task that continues nothing.
func (a *Activities) loadCarried(ctx context.Context, k TranscriptKey) (carriedFiles, error) {
	if k.Parent == nil {
		return nil, nil
	}
	var list []CarriedFile
	if err := a.Transcript.GetOnce(ctx, k, CarriedName, &list); err != nil {
		return nil, storageError("reading where the carried files went", err)
	}
	return indexCarried(list), nil
}

// apply shows an entry with its carried files as this task has them: each
// reference replaced by its copy in this task's space, or, when there is no
// copy, by a note saying so (a reference outside this task's space never
// reaches the model).
func (c carriedFiles) apply(m contract.Message) contract.Message {
	if len(c) == 0 || !m.TaskIO.HasFiles() {
		return m
	}
	parts := make([]contract.ContentPart, len(m.Message))
	for i, p := range m.Message {
		parts[i] = p
		if p.File == nil {
			continue
		}
		f, ok := c[carriedKey(*p.File, recordedSHA(p))]
		switch {
		case !ok:
		case f.Part != nil:
			parts[i] = *f.Part
		default:
			parts[i] = contract.TextPart(fmt.Sprintf("[%s: a file of the conversation this task continues; it could not be copied into this task's space: %s]", f.Ref, f.Missing))
		}
	}
	m.Message = parts
	return m
}
