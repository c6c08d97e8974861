package transcript

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// parallelism bounds concurrent blob operations of one call: enough to hide
// object-store latency, few enough not to hog file descriptors.
const parallelism = 8

// forEach runs fn for 0..n-1 on up to parallelism goroutines. The first error
// cancels the others' context and is returned; results are written by index,
// so callers keep order without sorting.
func forEach(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	if n == 1 {
		return fn(ctx, 0)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallelism)
	for i := range n {
		// After a failure no more calls start. A canceled caller is not a
		// failure: the calls still run and report it themselves, as one
		// served from the cache may succeed.
		if gctx.Err() != nil && ctx.Err() == nil {
			break
		}
		g.Go(func() error { return fn(gctx, i) })
	}
	return g.Wait()
}
