package activities

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/llm"
	"github.com/agenttask/agenttask/internal/mount"
)

// Bounds on what one model request carries from files.
const (
	maxInlineFileBytes = 20 << 20 // images and documents sent as data URLs
	maxFileTextBytes   = 1 << 20  // text files read into the request
)

func size(p contract.ContentPart) int64 {
	if p.SizeBytes == nil {
		return 0
	}
	return *p.SizeBytes
}

// resolveFiles reads an input's file parts from the task's mount, as the
// provider takes them for their media type: images and PDFs as data URLs,
// text as text (cut later when the request is over the model's context,
// fitRequest). The bytes live only in this request: never in workflow state
// or history. An object that changed since it was referenced fails the
// request with FILE_CHANGED rather than sending different bytes.
func (a *Activities) resolveFiles(ctx context.Context, spec contract.AgentSpec, taskID string, t contract.TaskIO) ([]llm.Part, error) {
	if spec.Mount == nil || a.Files == nil {
		return nil, final(contract.Invalid("the agent has no mount to read its files from"))
	}
	var parts []llm.Part
	for _, p := range t.Message {
		if p.File == nil {
			continue
		}
		o, err := objectOf(spec, p)
		if err != nil {
			return nil, final(contract.Invalid("%v", err))
		}
		m, err := a.mountOf(*spec.Mount)
		if err != nil {
			return nil, final(err)
		}
		if err := a.Files.Verify(ctx, m, taskID, o); err != nil {
			return nil, final(err)
		}
		kind := mediaKind(p.MimeType)
		limit := int64(maxInlineFileBytes)
		if kind == "text" {
			limit = maxFileTextBytes
		}
		if kind == "" || o.Size > limit {
			parts = append(parts, llm.Part{Type: "text", Text: fmt.Sprintf("[%s (%s, %d bytes) cannot be shown to this model directly]", *p.File, p.MimeType, o.Size)})
			continue
		}
		data, err := a.read(ctx, m, taskID, o, *p.File)
		if err != nil {
			return nil, err
		}
		switch kind {
		case "image":
			parts = append(parts, llm.Part{Type: "image_url", ImageURL: dataURL(p.MimeType, data)})
		case "document":
			parts = append(parts, llm.Part{Type: "file", FileName: o.Path, FileData: dataURL(p.MimeType, data)})
		case "text": // marked as a file's, so a request over the context can cut it (context.go)
			parts = append(parts, pastedPart(*p.File, data))
		}
	}
	return parts, nil
}

// read reads a whole (bounded) object and checks it is the referenced one.
func (a *Activities) read(ctx context.Context, m mount.Spec, taskID string, o mount.Object, ref string) ([]byte, error) {
	r, err := a.Files.Open(ctx, m, taskID, o.Path)
	if err != nil {
		return nil, final(err)
	}
	defer r.Close()
	var buf bytes.Buffer
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(&buf, h), io.LimitReader(r, o.Size+1)); err != nil {
		return nil, storageError("reading "+ref, err)
	}
	if int64(buf.Len()) != o.Size || hex.EncodeToString(h.Sum(nil)) != o.SHA256 {
		return nil, final(&contract.Error{Type: mount.ErrFileChanged, Message: ref + " changed after it was referenced: its content no longer has the recorded sha256; attach it again to use its current content"})
	}
	return buf.Bytes(), nil
}

// mediaKind says how a file is shown to the model. Images are the four
// types every provider takes (others, such as SVG or BMP, which a tool may
// return, would fail the whole request): the rest get a note.
func mediaKind(mime string) string {
	switch {
	case mime == "image/png", mime == "image/jpeg", mime == "image/gif", mime == "image/webp":
		return "image"
	case mime == "application/pdf":
		return "document"
	case strings.HasPrefix(mime, "text/"), mime == "application/json":
		return "text"
	}
	return ""
}

func dataURL(mime string, data []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
}
