package mount

import (
	"context"
	"encoding/hex"
	"io"
	"mime"

	"github.com/agenttask/agenttask/contract"
)

// Upload streams r into the task's space at path (replacing what was there)
// and returns the content part to send ({"mimeType", "file": root://path,
// "sizeBytes"}) and the Object, sha256 included (hashed while writing).
// Nothing is published under path unless r is read to its end and the write
// completes. Metadata on the part is the caller's to add.
func (s *Store) Upload(ctx context.Context, m Spec, taskID, path, mimeType string, r io.Reader) (contract.ContentPart, Object, error) {
	mt, pl, err := s.resolve(ctx, m, taskID, path)
	if err != nil {
		return contract.ContentPart{}, Object{}, err
	}
	if mimeType == "" {
		return contract.ContentPart{}, Object{}, contract.Invalid("%s: a mimeType is required, e.g. \"video/mp4\" or \"text/plain\"", pl.ref)
	}
	if _, _, err := mime.ParseMediaType(mimeType); err != nil {
		return contract.ContentPart{}, Object{}, contract.Invalid("%s: mimeType %q is not a media type (%v); use e.g. \"video/mp4\"", pl.ref, mimeType, err)
	}
	if err := pl.checkWrite(); err != nil {
		return contract.ContentPart{}, Object{}, err
	}
	p := startProgress(nil)
	n, sum, err := mt.write(ctx, pl, mt.options(mimeType, nil), r, p, nil)
	if err != nil {
		return contract.ContentPart{}, Object{}, err
	}
	a, err := mt.attrs(ctx, pl)
	if err != nil {
		return contract.ContentPart{}, Object{}, err
	}
	o := objectOf(path, a, mt.local())
	if o.Size != n {
		return contract.ContentPart{}, Object{}, changed(pl.ref, "another writer replaced it while it was uploaded (%d bytes written, %d stored)", n, o.Size)
	}
	o.SHA256 = hex.EncodeToString(sum)
	file := pl.ref
	return contract.ContentPart{MimeType: mimeType, File: &file, SizeBytes: &n}, o, nil
}
