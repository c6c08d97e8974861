package main

import (
	"strconv"
	"strings"

	"github.com/agenttask/agenttask/starter"
)

// The workers' deployment name (as the worker reads it; docs/deploy.md),
// and its default there.
const (
	EnvDeploymentName     = "AGENT_DEPLOYMENT_NAME"
	defaultDeploymentName = "agenttask"
)

// deployUsage is the deploy command's help (its usage errors carry it).
const deployUsage = `deploy describe
deploy current BUILD_ID
deploy ramp BUILD_ID PERCENT
deploy ramp-stop
deploy delete BUILD_ID
      the workers' Worker Deployment (AGENT_DEPLOYMENT_NAME, default agenttask):
      describe prints {"deployment", "current", "ramping", "ramp_percent",
      "versions": [{"build_id", "status", "created_at"}]}, status one of
      current, ramping, draining (pinned runs open), drained, inactive;
      current makes BUILD_ID the version new tasks start on (also the
      rollback); ramp sends PERCENT (0-100) of new tasks to BUILD_ID, ramp-stop
      ends the ramp;
      delete forgets a drained version whose workers stopped. Each prints
      the deployment as describe does.`

// deploy runs `starter deploy ACTION [ARGS]`.
func deploy(x *cli, pos []string) (any, error) {
	if len(pos) == 0 {
		return nil, usagef("deploy: ACTION is missing; usage:\n%s", deployUsage)
	}
	action, args := pos[0], pos[1:]
	want := map[string]int{"describe": 0, "current": 1, "ramp": 2, "ramp-stop": 0, "delete": 1}
	n, ok := want[action]
	if !ok {
		return nil, usagef("deploy: unknown action %q; usage:\n%s", action, deployUsage)
	}
	if len(args) != n {
		return nil, usagef("deploy %s: want %d arguments, got %d; usage:\n%s", action, n, len(args), deployUsage)
	}
	var percent float64
	if action == "ramp" {
		var err error
		if percent, err = strconv.ParseFloat(strings.TrimSuffix(args[1], "%"), 32); err != nil || percent < 0 || percent > 100 {
			return nil, usagef("deploy ramp: PERCENT %q: want a number from 0 to 100; usage:\n%s", args[1], deployUsage)
		}
	}
	c, err := x.client()
	if err != nil {
		return nil, err
	}
	name := strings.TrimSpace(x.getenv(EnvDeploymentName))
	if name == "" {
		name = defaultDeploymentName
	}
	d := starter.NewDeployment(c.Temporal(), name)
	switch action {
	case "current":
		err = d.SetCurrent(x.ctx, args[0])
	case "ramp":
		err = d.Ramp(x.ctx, args[0], float32(percent))
	case "ramp-stop":
		err = d.Ramp(x.ctx, "", 0)
	case "delete":
		err = d.DeleteVersion(x.ctx, args[0])
	}
	if err != nil {
		return nil, err
	}
	return d.Describe(x.ctx)
}
