// Package deploy checks the deployment files at the repository's root:
// docker-compose.yml is loaded and validated against the Compose
// Specification's schema by compose-go (the library `docker compose` uses),
// with .env.example as the operator's .env, so `make test` catches what
// `docker compose config -q` would refuse, without a Docker engine.
package deploy

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"go.temporal.io/server/common/dynamicconfig"
)

func load(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{"../docker-compose.yml"},
		cli.WithWorkingDirectory(".."),
		cli.WithEnvFiles("../.env.example"),
		cli.WithDotEnv,
		cli.WithName("agenttask"),
	)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yml with .env.example: %v", err)
	}
	return p
}

func TestComposeFileIsValid(t *testing.T) {
	p := load(t)
	for _, name := range []string{"postgres", "temporal-schema", "temporal", "temporal-setup", "temporal-ui", "nats", "minio", "minio-setup", "worker", "api"} {
		if _, err := p.GetService(name); err != nil {
			t.Errorf("service %s: %v", name, err)
		}
	}
	for _, s := range p.Services {
		if strings.Contains(s.Image, "auto-setup") {
			t.Errorf("%s uses the deprecated auto-setup image %s", s.Name, s.Image)
		}
	}
	worker, _ := p.GetService("worker")
	if worker.Deploy == nil || worker.Deploy.Replicas == nil || *worker.Deploy.Replicas != 2 {
		t.Errorf("worker: want 2 replicas")
	}
	for _, name := range []string{"worker", "api", "postgres", "temporal", "nats", "minio"} {
		s, _ := p.GetService(name)
		if s.HealthCheck == nil || len(s.HealthCheck.Test) == 0 {
			t.Errorf("%s has no health check", name)
		}
	}
	if w, _ := p.GetService("worker"); !strings.Contains(strings.Join(w.HealthCheck.Test, " "), "/healthz") {
		t.Errorf("the worker's health check does not probe /healthz: %q", w.HealthCheck.Test)
	}
	ui, _ := p.GetService("temporal-ui")
	if v := ui.Environment["TEMPORAL_CODEC_ENDPOINT"]; v == nil || !strings.HasSuffix(*v, "/codec") {
		t.Errorf("temporal-ui: TEMPORAL_CODEC_ENDPOINT should name the API's /codec, got %v", v)
	}
	setup, _ := p.GetService("temporal-setup")
	script := strings.Join(setup.Command, " ")
	for _, sa := range []string{"AgentName", "AgentModel", "AgentState"} {
		if !strings.Contains(script, sa) {
			t.Errorf("temporal-setup does not register search attribute %s", sa)
		}
	}
	for _, v := range []string{"postgres-data", "nats-data", "minio-data"} {
		if _, ok := p.Volumes[v]; !ok {
			t.Errorf("no named volume %s", v)
		}
	}
}

// Every variable docker-compose.yml reads is listed in .env.example.
func TestEnvExampleListsEveryVariable(t *testing.T) {
	compose, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z_][A-Z0-9_]*)=`).FindAllStringSubmatch(string(example), -1) {
		listed[m[1]] = true
	}
	// ${NAME...}, not $${NAME} (a shell variable inside a container).
	for _, m := range regexp.MustCompile(`(^|[^$])\$\{([A-Z_][A-Z0-9_]*)`).FindAllStringSubmatch(string(compose), -1) {
		if !listed[m[2]] {
			t.Errorf("docker-compose.yml reads %s, which .env.example does not list", m[2])
		}
	}
}

// The server runs with the dynamic config of deploy/temporal, every key of
// which the server knows, and which enables what versioned workers need;
// the workers take their deployment version from .env (docs/deploy.md).
func TestWorkerVersioningIsEnabled(t *testing.T) {
	p := load(t)
	temporal, _ := p.GetService("temporal")
	path := temporal.Environment["DYNAMIC_CONFIG_FILE_PATH"]
	if path == nil {
		t.Fatal("temporal: no DYNAMIC_CONFIG_FILE_PATH")
	}
	source := ""
	for _, v := range temporal.Volumes {
		if v.Target == *path {
			source = v.Source
		}
	}
	if source == "" {
		t.Fatalf("temporal: nothing mounted at DYNAMIC_CONFIG_FILE_PATH %s", *path)
	}
	b, err := os.ReadFile(source)
	if err != nil {
		t.Fatal(err)
	}
	lr := dynamicconfig.LoadYamlFile(b)
	for _, e := range append(lr.Errors, lr.Warnings...) {
		t.Errorf("%s: %v", source, e)
	}
	for _, k := range []string{dynamicconfig.EnableDeploymentVersions.Key().String(), dynamicconfig.FrontendEnableWorkerVersioningWorkflowAPIs.Key().String()} {
		vs := lr.Map[dynamicconfig.MakeKey(k)]
		if len(vs) != 1 || vs[0].Value != true {
			t.Errorf("%s: %s = %v, want true", source, k, vs)
		}
	}
	worker, _ := p.GetService("worker")
	for _, k := range []string{"AGENT_DEPLOYMENT_NAME", "AGENT_BUILD_ID"} {
		if _, ok := worker.Environment[k]; !ok {
			t.Errorf("worker: no %s", k)
		}
	}
}
