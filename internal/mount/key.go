package mount

import (
	"errors"

	"github.com/agenttask/agenttask/internal/blobkey"
)

// spacePrefix is the folder of a task's space in its mount, ending in "/":
// tasks/<escaped task id>/files/, escaped as the transcript escapes it. Next to it, under tasks/<escaped task id>/,
// the transcript keeps <first run id>/ folders when it shares the bucket; run
// IDs are never "files".
func spacePrefix(taskID string) (string, error) {
	if taskID == "" {
		return "", errors.New("mount: empty task ID")
	}
	return "tasks/" + blobkey.Segment(taskID) + "/files/", nil
}

// objectKey is the blob key of path (already checked) in the task's space.
func objectKey(taskID, path string) (string, error) {
	p, err := spacePrefix(taskID)
	if err != nil {
		return "", err
	}
	return p + path, nil
}
