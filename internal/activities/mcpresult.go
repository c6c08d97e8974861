package activities

import (
	"bytes"
	"context"
	"fmt"
	"mime"
	"strings"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/mcp"
	"github.com/agenttask/agenttask/internal/mount"
)

// maxMCPContentBytes bounds the text of a call's result the model reads
// (the files it returned are in the mount, not here).
const maxMCPContentBytes = 60 << 10

// renderMCPResult turns a tool's result into what the model reads: text
// parts as they are, structured content as JSON, resource links by URI;
// images, audio and embedded resources become files in the task's mount
// (recorded and checked as docs/content.md says), or a note when there is none.
func (a *Activities) renderMCPResult(ctx context.Context, in CallMCPToolInput, r *mcp.Result) (*CallMCPToolResult, error) {
	var lines []string
	out := &CallMCPToolResult{IsError: r.IsError}
	n := 0
	for _, p := range r.Parts {
		switch p.Kind {
		case mcp.KindText:
			lines = append(lines, p.Text)
		case mcp.KindLink:
			lines = append(lines, fmt.Sprintf("[resource link %q: %s%s]", p.Name, p.URI, withType(p.MimeType)))
		case mcp.KindImage, mcp.KindAudio, mcp.KindResource:
			n++
			part, note, err := a.saveMCPFile(ctx, in, n, p)
			if err != nil {
				return nil, err
			}
			lines = append(lines, note)
			if part != nil {
				out.Files = append(out.Files, *part)
			}
		}
	}
	if len(r.Structured) > 0 {
		lines = append(lines, "structured content (JSON): "+string(r.Structured))
	}
	content := strings.Join(lines, "\n")
	if len(content) > maxMCPContentBytes {
		content = clip(content, maxMCPContentBytes) + " [cut: the result is over the size bound]"
	}
	if content == "" {
		content = "(the tool returned no content)"
	}
	if r.IsError {
		content = "error: " + content
	}
	out.Content = content
	return out, nil
}

func withType(mt string) string {
	if mt == "" {
		return ""
	}
	return " (" + mt + ")"
}

// saveMCPFile writes one binary or resource part into the task's mount and
// returns its checked content part and the line the model reads of it.
func (a *Activities) saveMCPFile(ctx context.Context, in CallMCPToolInput, n int, p mcp.Part) (*contract.ContentPart, string, error) {
	data, mt := p.Data, p.MimeType
	if p.Kind == mcp.KindResource && data == nil {
		data = []byte(p.Text)
		if mt == "" {
			mt = "text/plain"
		}
	}
	if mt == "" {
		mt = "application/octet-stream"
	}
	what := map[string]string{mcp.KindImage: "an image", mcp.KindAudio: "audio", mcp.KindResource: "a resource"}[p.Kind]
	if p.URI != "" {
		what += " " + p.URI
	}
	if in.Mount == nil || a.Files == nil {
		return nil, fmt.Sprintf("[the tool returned %s (%s, %d bytes), but this agent has no mount to receive files, so it is not shown]", what, mt, len(data)), nil
	}
	m, err := a.mountOf(*in.Mount)
	if err != nil {
		return nil, fmt.Sprintf("[the tool returned %s (%s, %d bytes), which could not be kept: %s]", what, mt, len(data), contract.MessageOf(err)), nil
	}
	path := fmt.Sprintf("%s-%d%s", in.FilePrefix, n, extensionOf(mt))
	part, o, err := a.Files.Upload(ctx, m, in.TaskID, path, mt, bytes.NewReader(data))
	if err != nil {
		if _, typed := err.(*contract.Error); typed {
			return nil, fmt.Sprintf("[the tool returned %s (%s, %d bytes), which could not be kept: %s]", what, mt, len(data), contract.MessageOf(err)), nil
		}
		return nil, "", err // storage unavailable: retried
	}
	checked, err := recordObject(part, o)
	if err != nil {
		return nil, "", err
	}
	return &checked, fmt.Sprintf("[the tool returned %s (%s, %d bytes), now in your mount as %s]", what, mt, len(data), mount.FormatRef(in.Mount.Root, path)), nil
}

// extensionOf names a file of media type mt: the common extension for the
// usual types, else the first the system knows, else none.
func extensionOf(mt string) string {
	base, _, _ := strings.Cut(mt, ";")
	switch strings.TrimSpace(base) {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	case "audio/wav", "audio/x-wav":
		return ".wav"
	case "audio/mpeg":
		return ".mp3"
	case "text/plain":
		return ".txt"
	case "application/json":
		return ".json"
	case "application/pdf":
		return ".pdf"
	}
	if exts, _ := mime.ExtensionsByType(base); len(exts) > 0 {
		return exts[0]
	}
	return ""
}
