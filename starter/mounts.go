package starter

import "github.com/agenttask/agenttask/internal/mount"

// Mounts is the operator's list of mounts, name → storage URL, as
// AGENT_MOUNTS gives it to the worker (docs/content.md). Give the client the
// same list (CheckMounts) and it refuses an agent naming an unlisted mount
// before the task starts; UploadNamed writes into one of them.
type Mounts = map[string]string

// ParseMounts reads an AGENT_MOUNTS value: a JSON object of name to mount
// URL, such as {"files": "file:///var/lib/agenttask/files"} ("" is none).
func ParseMounts(value string) (Mounts, error) { return mount.ParseMounts(value) }
