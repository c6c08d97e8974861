package transcript

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/agenttask/agenttask/internal/blobkey"
)

// State objects: what the runtime keeps about the store itself rather than
// about a task (the retention sweep's cursor, internal/cleanup), under
// sweep/ beside tasks/, so no task folder and no listing of tasks meets
// them.

const stateRoot = "sweep/"

func stateKey(name string) (string, error) {
	if name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("transcript: bad state name %q", name)
	}
	return stateRoot + blobkey.Segment(name) + ".json", nil
}

// PutState stores v as JSON under name, replacing what was there.
func (s *Store) PutState(ctx context.Context, name string, v any) error {
	key, err := stateKey(name)
	if err != nil {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("transcript: state %q: %w", name, err)
	}
	if err := s.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("transcript: state %q: %w", name, err)
	}
	return nil
}

// GetState decodes the state stored under name into v; none is an error
// wrapping ErrNotFound.
func (s *Store) GetState(ctx context.Context, name string, v any) error {
	key, err := stateKey(name)
	if err != nil {
		return err
	}
	data, err := s.b.ReadAll(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("transcript: state %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("transcript: state %q: %w", name, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("transcript: state %q: %w", name, err)
	}
	return nil
}

// DeleteState removes the state under name; none is not an error.
func (s *Store) DeleteState(ctx context.Context, name string) error {
	key, err := stateKey(name)
	if err != nil {
		return err
	}
	if err := s.b.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("transcript: state %q: %w", name, err)
	}
	return nil
}
