//go:build deps

// Package deps pins the modules the project builds on while the code that uses them lands.
package deps

import (
	_ "github.com/google/cel-go/cel"
	_ "github.com/santhosh-tekuri/jsonschema/v5"
	_ "github.com/temporalio/ui-server/v2/server"
	_ "go.temporal.io/api/workflowservice/v1"
	_ "go.temporal.io/sdk/client"
	_ "go.temporal.io/server/temporal"
	_ "go.temporal.io/server/temporaltest"
	_ "go.uber.org/zap"
	_ "gocloud.dev/blob/fileblob"
)
