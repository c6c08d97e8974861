package tasksapi

import (
	"context"
	"sync"
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/agenttask/agenttask/internal/definitions"
)

// Every read of the store is a query of a Temporal workflow (a workflow
// task on the store's worker). A run reads its task and its prompt
// version, a follow-up input its task: the cache keeps what it can.
//
//   - A prompt version never changes once written (the store has no call
//     that changes or deletes one), so it is kept until evicted, by size.
//   - A task definition changes only through this API's PUT and DELETE,
//     which drop it here; another API process serving the same project
//     drops nothing here, so an entry also expires taskCacheTTL after it
//     was read: a change made through another replica is seen within it.
//
// Only answers found are kept: a task or version created since a
// not-found answer is read at the next request.
const (
	// taskCacheTTL bounds how long a change made through another API
	// process may go unseen by this one.
	taskCacheTTL = 5 * time.Second
	// promptCacheBytes bounds the prompt texts kept (a text is at most 100 KB).
	promptCacheBytes = 32 << 20
	// taskCacheEntries bounds the tasks kept (a project holds at most 100).
	taskCacheEntries = 1000
)

type versionKey struct {
	name    string
	version int
}

// definitionCache reads through to the store and keeps what it may.
type definitionCache struct {
	store    *definitions.Store
	versions *otter.Cache[versionKey, definitions.PromptVersion]
	tasks    *otter.Cache[string, definitions.Stored]
	// gen counts the task writes made through this cache: a read that
	// began before a write does not keep what it read (it may be the old
	// definition).
	mu  sync.Mutex
	gen uint64
}

func newDefinitionCache(store *definitions.Store, ttl time.Duration) *definitionCache {
	return &definitionCache{
		store: store,
		versions: otter.Must(&otter.Options[versionKey, definitions.PromptVersion]{
			MaximumWeight: promptCacheBytes,
			Weigher:       func(_ versionKey, v definitions.PromptVersion) uint32 { return uint32(len(v.Text) + 256) },
		}),
		tasks: otter.Must(&otter.Options[string, definitions.Stored]{
			MaximumSize:      taskCacheEntries,
			ExpiryCalculator: otter.ExpiryWriting[string, definitions.Stored](ttl),
		}),
	}
}

// GetPromptVersion reads one version with its text.
func (c *definitionCache) GetPromptVersion(ctx context.Context, name string, version int) (definitions.PromptVersion, error) {
	k := versionKey{name, version}
	if v, ok := c.versions.GetIfPresent(k); ok {
		return v, nil
	}
	v, err := c.store.GetPromptVersion(ctx, name, version)
	if err == nil {
		c.versions.Set(k, v)
	}
	return v, err
}

// GetTask reads a task (task_not_found when there is none).
func (c *definitionCache) GetTask(ctx context.Context, name string) (definitions.Stored, error) {
	if st, ok := c.tasks.GetIfPresent(name); ok {
		return st, nil
	}
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	st, err := c.store.GetTask(ctx, name)
	if err == nil {
		c.mu.Lock()
		if c.gen == gen {
			c.tasks.Set(name, st)
		}
		c.mu.Unlock()
	}
	return st, err
}

// wrote drops name after a write (also a failed one: it may have been
// applied) and keeps reads begun before it from filling it back.
func (c *definitionCache) wrote(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.tasks.Invalidate(name)
}

// CreateTask stores a new task.
func (c *definitionCache) CreateTask(ctx context.Context, name string, def []byte, by string) (definitions.Stored, error) {
	defer c.wrote(name)
	return c.store.CreateTask(ctx, name, def, by)
}

// PutTask replaces a task's definition.
func (c *definitionCache) PutTask(ctx context.Context, name string, def []byte, by string) (definitions.Stored, error) {
	defer c.wrote(name)
	return c.store.PutTask(ctx, name, def, by)
}

// DeleteTask deletes a task.
func (c *definitionCache) DeleteTask(ctx context.Context, name, by string) error {
	defer c.wrote(name)
	return c.store.DeleteTask(ctx, name, by)
}
