package devserver

// This is the package's only test on purpose: linking the whole Temporal
// server into a test binary costs ~200 MB and minutes on a small machine.
// Add checks here rather than new test functions or packages.

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func TestStartInMemoryWithUI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	s, err := Start(ctx, Options{SearchAttributes: SearchAttributes})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	if s.Namespace() != "default" || !strings.HasPrefix(s.FrontendHostPort(), "127.0.0.1:") {
		t.Fatalf("namespace %q frontend %q", s.Namespace(), s.FrontendHostPort())
	}

	conn, err := grpc.NewClient(s.FrontendHostPort(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := workflowservice.NewWorkflowServiceClient(conn).DescribeNamespace(ctx,
		&workflowservice.DescribeNamespaceRequest{Namespace: "default"}); err != nil {
		t.Fatalf("describe namespace: %v", err)
	}
	list, err := operatorservice.NewOperatorServiceClient(conn).ListSearchAttributes(ctx,
		&operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	for name := range SearchAttributes {
		if got := list.GetCustomAttributes()[name]; got != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
			t.Errorf("search attribute %s: got %v", name, got)
		}
	}

	// Registering again must be a no-op.
	if err := ensureSearchAttributes(ctx, conn, "default", SearchAttributes); err != nil {
		t.Errorf("second ensureSearchAttributes: %v", err)
	}

	for _, path := range []string{"/", "/api/v1/namespaces"} {
		resp, err := http.Get(s.UIURL() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("UI %s: status %d: %.200s", path, resp.StatusCode, body)
		}
		if path == "/api/v1/namespaces" && !strings.Contains(string(body), `"default"`) {
			t.Errorf("UI %s does not list the namespace: %.200s", path, body)
		}
	}
}
