package devserver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
)

const pollInterval = 100 * time.Millisecond

// poll calls try until it succeeds or ctx ends, returning try's last error
// with ctx's.
func poll(ctx context.Context, try func(context.Context) error) error {
	for {
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := try(attempt)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(pollInterval):
		}
	}
}

// waitFrontend returns once the frontend serves requests for namespace.
func waitFrontend(ctx context.Context, conn grpc.ClientConnInterface, namespace string) error {
	wf := workflowservice.NewWorkflowServiceClient(conn)
	return poll(ctx, func(ctx context.Context) error {
		if _, err := wf.GetSystemInfo(ctx, &workflowservice.GetSystemInfoRequest{}); err != nil {
			return err
		}
		_, err := wf.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
		return err
	})
}

// ensureSearchAttributes adds the attributes that namespace lacks. Existing
// ones with the same type are kept; a type clash is an error because the
// server cannot change an attribute's type.
func ensureSearchAttributes(ctx context.Context, conn grpc.ClientConnInterface, namespace string, want map[string]enumspb.IndexedValueType) error {
	if len(want) == 0 {
		return nil
	}
	op := operatorservice.NewOperatorServiceClient(conn)
	list, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range want {
		have, ok := list.GetCustomAttributes()[name]
		if !ok {
			have, ok = list.GetSystemAttributes()[name]
		}
		switch {
		case !ok:
			missing[name] = typ
		case have != typ:
			return fmt.Errorf("search attribute %s exists as %v, want %v", name, have, typ)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: missing,
	}); err != nil {
		return fmt.Errorf("add search attributes: %w", err)
	}
	return waitSearchAttributesUsable(ctx, conn, namespace, slices.Sorted(maps.Keys(missing)))
}

// waitSearchAttributesUsable waits until a visibility query naming the new
// attributes is accepted. The namespace registry that maps them is cached
// (refreshed every 2s), and until it refreshes, starting a workflow that
// sets them would fail.
func waitSearchAttributesUsable(ctx context.Context, conn grpc.ClientConnInterface, namespace string, names []string) error {
	conds := make([]string, len(names))
	for i, n := range names {
		conds[i] = n + " IS NULL"
	}
	query := strings.Join(conds, " AND ")
	wf := workflowservice.NewWorkflowServiceClient(conn)
	return poll(ctx, func(ctx context.Context) error {
		_, err := wf.CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: namespace,
			Query:     query,
		})
		return err
	})
}
