package starter

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agenttask/agenttask/contract"
)

// Deployment is an operator's handle on the workers' Worker Deployment
// (docs/deploy.md): which version new tasks start on, a ramp to a new one,
// which old ones still hold pinned runs. It wraps the SDK's
// WorkerDeploymentClient, so `temporal worker deployment ...` does the same.
type Deployment struct {
	Name string // the workers' AGENT_DEPLOYMENT_NAME
	h    client.WorkerDeploymentHandle
}

// NewDeployment is the handle on deployment name of c's namespace.
func NewDeployment(c client.Client, name string) *Deployment {
	return &Deployment{Name: name, h: c.WorkerDeploymentClient().GetHandle(name)}
}

// DeploymentState is what Describe answers.
type DeploymentState struct {
	Deployment string `json:"deployment"`
	// Current is the build ID new tasks (and runs continuing as new)
	// start on; "" none yet: tasks wait for a version to be made current.
	Current     string  `json:"current"`
	Ramping     string  `json:"ramping,omitempty"`
	RampPercent float32 `json:"ramp_percent,omitempty"`
	// Versions are every version whose workers have polled, newest first.
	Versions []VersionState `json:"versions"`
}

// VersionState is one version of the deployment.
type VersionState struct {
	BuildID string `json:"build_id"`
	// Status: "current", "ramping", "draining" (not current, pinned runs
	// still open: keep its workers), "drained" (no open pinned run: its
	// workers may stop) or "inactive" (never current nor ramping).
	Status    string `json:"status"`
	CreatedAt string `json:"created_at"`
}

// Describe reads the deployment's routing and its versions.
func (d *Deployment) Describe(ctx context.Context) (DeploymentState, error) {
	r, err := d.h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return DeploymentState{}, d.wrap(err, "")
	}
	rc := r.Info.RoutingConfig
	st := DeploymentState{Deployment: d.Name, Current: buildIDOf(rc.CurrentVersion), Ramping: buildIDOf(rc.RampingVersion), Versions: []VersionState{}}
	if st.Ramping != "" {
		st.RampPercent = rc.RampingVersionPercentage
	}
	for _, v := range r.Info.VersionSummaries { // the server lists the newest first
		s := VersionState{BuildID: v.Version.BuildID, CreatedAt: contract.FormatTime(v.CreateTime), Status: "inactive"}
		switch {
		case s.BuildID == st.Current:
			s.Status = "current"
		case s.BuildID == st.Ramping:
			s.Status = "ramping"
		case v.DrainageStatus == client.WorkerDeploymentVersionDrainageStatusDraining:
			s.Status = "draining"
		case v.DrainageStatus == client.WorkerDeploymentVersionDrainageStatusDrained:
			s.Status = "drained"
		}
		st.Versions = append(st.Versions, s)
	}
	return st, nil
}

// SetCurrent makes buildID the version new tasks start on. Runs pinned to
// other versions stay where they are; it is also the rollback (make the
// previous build current again). The version's workers must have polled.
func (d *Deployment) SetCurrent(ctx context.Context, buildID string) error {
	if buildID == "" {
		return contract.Invalid("a build ID is required (the workers' AGENT_BUILD_ID)")
	}
	_, err := d.h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: buildID})
	return d.wrap(err, buildID)
}

// Ramp sends percent of new tasks to buildID, the rest to the current
// version; percent 0 with buildID "" ends the ramp.
func (d *Deployment) Ramp(ctx context.Context, buildID string, percent float32) error {
	if percent < 0 || percent > 100 {
		return contract.Invalid("ramp percent %v: want 0 to 100", percent)
	}
	if buildID == "" && percent != 0 {
		return contract.Invalid("a ramp of %v%% needs a build ID", percent)
	}
	_, err := d.h.SetRampingVersion(ctx, client.WorkerDeploymentSetRampingVersionOptions{BuildID: buildID, Percentage: percent})
	return d.wrap(err, buildID)
}

// DeleteVersion forgets a retired version: refused while it is current or
// ramping, while pinned runs are open on it, or while its workers still
// poll (stop them first; the server remembers pollers for minutes).
func (d *Deployment) DeleteVersion(ctx context.Context, buildID string) error {
	if buildID == "" {
		return contract.Invalid("a build ID is required")
	}
	_, err := d.h.DeleteVersion(ctx, client.WorkerDeploymentDeleteVersionOptions{BuildID: buildID})
	return d.wrap(err, buildID)
}

// wrap names the deployment and version in the server's refusal.
func (d *Deployment) wrap(err error, buildID string) error {
	if err == nil {
		return nil
	}
	if buildID == "" {
		return fmt.Errorf("worker deployment %q: %w", d.Name, err)
	}
	return fmt.Errorf("worker deployment %q, build ID %q: %w", d.Name, buildID, err)
}

func buildIDOf(v *worker.WorkerDeploymentVersion) string {
	if v == nil {
		return ""
	}
	return v.BuildID
}
