package workerkit

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agenttask/agenttask/contract"
)

// Worker Deployment Versioning (docs/deploy.md): a worker given a build ID
// serves as one version of a Worker Deployment. Each AgentTask run is pinned
// to the version whose worker ran its first workflow task, so a rollout or
// a rollback never hands a run's history to other code; a run moves to the
// deployment's current version when it continues as new.
const (
	EnvDeploymentName = "AGENT_DEPLOYMENT_NAME"
	EnvBuildID        = "AGENT_BUILD_ID"
)

// DefaultDeploymentName is the deployment a worker given only a build ID
// joins.
const DefaultDeploymentName = "agenttask"

// maxDeploymentField bounds the name and the build ID: the server refuses
// longer ones (their sum, with a prefix, makes a workflow ID).
const maxDeploymentField = 255

// Deployment names the Worker Deployment Version a worker serves as. The
// zero value is an unversioned worker (every run on any worker of the
// queue, the rules ladder alone keeping histories replayable).
type Deployment struct {
	Name    string // AGENT_DEPLOYMENT_NAME; DefaultDeploymentName when a build ID is set
	BuildID string // AGENT_BUILD_ID; "" versioning off
}

// Versioned says whether the worker serves as a deployment version.
func (d Deployment) Versioned() bool { return d.BuildID != "" }

// Version is the SDK's name of it.
func (d Deployment) Version() sdkworker.WorkerDeploymentVersion {
	return sdkworker.WorkerDeploymentVersion{DeploymentName: d.Name, BuildID: d.BuildID}
}

// DeploymentFromEnv reads AGENT_DEPLOYMENT_NAME and AGENT_BUILD_ID.
// Versioning is on only when a build ID is given: an operator who sets
// nothing keeps today's unversioned workers, and one who names a
// deployment without a build ID is told to give one rather than silently
// left unversioned.
func DeploymentFromEnv(getenv func(string) string) (Deployment, error) {
	d := Deployment{Name: strings.TrimSpace(getenv(EnvDeploymentName)), BuildID: strings.TrimSpace(getenv(EnvBuildID))}
	if d.BuildID == "" {
		if d.Name != "" {
			return Deployment{}, fmt.Errorf("%s=%q needs %s too: the build ID of this worker's code (a release tag or commit, such as 2026-12-02.1 or 7e21d2c); leave both unset for an unversioned worker", EnvDeploymentName, d.Name, EnvBuildID)
		}
		return Deployment{}, nil
	}
	if d.Name == "" {
		d.Name = DefaultDeploymentName
	}
	return d, d.Validate()
}

// Validate checks what the server would refuse, with the variable to fix.
func (d Deployment) Validate() error {
	if !d.Versioned() {
		if d.Name != "" {
			return fmt.Errorf("deployment %q has no build ID (%s)", d.Name, EnvBuildID)
		}
		return nil
	}
	if d.Name == "" {
		return fmt.Errorf("build ID %q has no deployment name (%s)", d.BuildID, EnvDeploymentName)
	}
	for _, f := range []struct{ env, v string }{{EnvDeploymentName, d.Name}, {EnvBuildID, d.BuildID}} {
		switch {
		case len(f.v) > maxDeploymentField:
			return fmt.Errorf("%s: %d characters, at most %d", f.env, len(f.v), maxDeploymentField)
		case strings.HasPrefix(f.v, "__"):
			return fmt.Errorf("%s=%q: must not start with \"__\" (Temporal reserves it)", f.env, f.v)
		case strings.ContainsAny(f.v, " \t\r\n"):
			return fmt.Errorf("%s=%q: must not contain spaces", f.env, f.v)
		}
	}
	if strings.ContainsAny(d.Name, ".:") {
		return fmt.Errorf("%s=%q: must not contain '.' or ':' (Temporal joins name and build ID with them), such as agenttask or agenttask-prod", EnvDeploymentName, d.Name)
	}
	return nil
}

// applyDeployment makes a worker the version d names, unless the worker's
// own options already opt into versioning (a team's worker that sets
// DeploymentOptions itself keeps them). Workflows registered without a
// behaviour of their own are pinned (the team's, beside AgentTask, which
// Register pins anyway).
func applyDeployment(d Deployment, o *sdkworker.Options) {
	if !d.Versioned() || o.DeploymentOptions.UseVersioning {
		return
	}
	o.DeploymentOptions = sdkworker.DeploymentOptions{
		UseVersioning:             true,
		Version:                   d.Version(),
		DefaultVersioningBehavior: workflow.VersioningBehaviorPinned,
	}
}

// upgradeOnContinueAsNew is the interceptor of versioned workers: an
// AgentTask run that continues as new starts its next run on the
// deployment's current (or ramping) version instead of inheriting its pin.
// It sets one attribute of the continue-as-new command, which replay does
// not compare, so histories recorded with or without it replay alike; on
// unversioned workers it is not installed and the commands are unchanged.
type upgradeOnContinueAsNew struct {
	interceptor.WorkerInterceptorBase
}

func (*upgradeOnContinueAsNew) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	if workflow.GetInfo(ctx).WorkflowType.Name != contract.WorkflowType {
		return next // the team's workflows continue as they say
	}
	return &upgradeInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}}
}

type upgradeInbound struct {
	interceptor.WorkflowInboundInterceptorBase
}

func (i *upgradeInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&upgradeOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}})
}

type upgradeOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
}

func (o *upgradeOutbound) NewContinueAsNewError(ctx workflow.Context, wfn any, args ...any) error {
	err := o.Next.NewContinueAsNewError(ctx, wfn, args...)
	var can *workflow.ContinueAsNewError
	if errors.As(err, &can) && can.InitialVersioningBehavior == workflow.ContinueAsNewVersioningBehaviorUnspecified {
		can.InitialVersioningBehavior = workflow.ContinueAsNewVersioningBehaviorAutoUpgrade
	}
	return err
}
