package mount

import (
	"encoding/hex"
	"time"

	"gocloud.dev/blob"
)

// Object describes one object of a task's space as it was when referenced.
type Object struct {
	Path    string    `json:"path"`          // inside the task's space (no root)
	Size    int64     `json:"size"`          // bytes
	SHA256  string    `json:"sha256"`        // hex, of the content
	MD5     string    `json:"md5,omitempty"` // hex, from the driver's attributes when it has one (never for file://)
	ETag    string    `json:"etag,omitempty"`
	ModTime time.Time `json:"modTime"`
}

// version is what Verify compares besides the size (see the package doc).
func (o Object) version() string {
	switch {
	case o.MD5 != "":
		return "md5 " + o.MD5
	case o.ETag != "":
		return "etag " + o.ETag
	default:
		return "modified " + o.ModTime.UTC().Format(time.RFC3339Nano)
	}
}

func (o Object) describe() string {
	switch {
	case o.MD5 != "":
		return "its MD5 is now " + o.MD5
	case o.ETag != "":
		return "its version (ETag) is now " + o.ETag
	default:
		return "it was modified at " + o.ModTime.UTC().Format(time.RFC3339Nano)
	}
}

func objectOf(path string, a *blob.Attributes, local bool) Object {
	o := Object{Path: path, Size: a.Size, ETag: a.ETag, ModTime: a.ModTime}
	if !local && len(a.MD5) > 0 {
		o.MD5 = hex.EncodeToString(a.MD5)
	}
	return o
}
