package worker

import (
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/agenttask/agenttask/internal/workerkit"
)

// DefaultDeploymentName is the deployment a worker given only a build ID
// joins.
const DefaultDeploymentName = workerkit.DefaultDeploymentName

// Deployment names the Worker Deployment Version a worker serves as
// (docs/deploy.md). The zero value is an unversioned worker: every run on
// any worker of the queue.
type Deployment struct {
	Name    string // AGENT_DEPLOYMENT_NAME; DefaultDeploymentName when a build ID is set
	BuildID string // AGENT_BUILD_ID; "" versioning off
}

// DeploymentFromEnv reads AGENT_DEPLOYMENT_NAME and AGENT_BUILD_ID.
// Versioning is on only when a build ID is given; a deployment name without
// one is an error.
func DeploymentFromEnv(getenv func(string) string) (Deployment, error) {
	d, err := workerkit.DeploymentFromEnv(getenv)
	return Deployment(d), err
}

// Versioned says whether the worker serves as a deployment version.
func (d Deployment) Versioned() bool { return workerkit.Deployment(d).Versioned() }

// Version is the SDK's name of it.
func (d Deployment) Version() sdkworker.WorkerDeploymentVersion {
	return workerkit.Deployment(d).Version()
}

// Validate checks what the server would refuse, with the variable to fix.
func (d Deployment) Validate() error { return workerkit.Deployment(d).Validate() }
