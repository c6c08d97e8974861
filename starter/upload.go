package starter

import (
	"context"
	"io"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/mount"
)

// Upload streams r into a task's space of an agent's mount (the task may not
// have started yet: choose its ID first) and returns the ContentPart to send.
// The caller needs the same access to the storage as the workers. A mount
// given by name is resolved with UploadNamed.
func Upload(ctx context.Context, m contract.MountSpec, taskID, path, mimeType string, r io.Reader) (contract.ContentPart, error) {
	if err := CheckTaskID(taskID); err != nil {
		return contract.ContentPart{}, err
	}
	if _, err := mount.ParseRef(m.Root, mount.FormatRef(m.Root, path)); err != nil {
		return contract.ContentPart{}, err
	}
	store := mount.NewStore()
	defer store.Close()
	part, _, err := store.Upload(ctx, mount.Spec{Root: m.Root, URL: m.URL}, taskID, path, mimeType, r)
	return part, err
}

// UploadNamed is Upload to a mount named in mounts (the workers' AGENT_MOUNTS).
func UploadNamed(ctx context.Context, mounts Mounts, root, name, taskID, path, mimeType string, r io.Reader) (contract.ContentPart, error) {
	spec, err := mount.Mounts(mounts).Resolve("--mount", contract.MountSpec{Root: root, Name: name})
	if err != nil {
		return contract.ContentPart{}, err
	}
	return Upload(ctx, contract.MountSpec{Root: spec.Root, URL: spec.URL}, taskID, path, mimeType, r)
}
