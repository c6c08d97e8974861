package mount

import (
	"strings"
	"testing"

	"github.com/agenttask/agenttask/contract"
)

func TestMountsResolve(t *testing.T) {
	m, err := ParseMounts(`{"files": "s3://bucket?region=eu-west-1&awssdk=v2", "local": "file:///var/lib/agenttask/files"}`)
	if err != nil {
		t.Fatal(err)
	}
	ok := []struct {
		spec contract.MountSpec
		url  string
	}{
		{contract.MountSpec{Root: "task", Name: "files"}, "s3://bucket?region=eu-west-1&awssdk=v2"},
		{contract.MountSpec{Root: "task", URL: "s3://bucket?awssdk=v2&region=eu-west-1"}, "s3://bucket?region=eu-west-1&awssdk=v2"},
		{contract.MountSpec{Root: "docs", URL: "file:///var/lib/agenttask/files/"}, "file:///var/lib/agenttask/files"},
	}
	for _, c := range ok {
		got, err := m.Resolve("agent.mount", c.spec)
		if err != nil || got.URL != c.url || got.Root != c.spec.Root {
			t.Errorf("%+v: %+v %v", c.spec, got, err)
		}
	}
	refused := []struct {
		spec contract.MountSpec
		want string
	}{
		{contract.MountSpec{Root: "task", URL: "s3://bucket?region=eu-west-1&awssdk=v2&endpoint=http://10.0.0.5"}, "agent.mount.url"},
		{contract.MountSpec{Root: "task", URL: "s3://bucket?region=eu-west-1"}, "agent.mount.url"},
		{contract.MountSpec{Root: "task", URL: "s3://other-tenant"}, "agent.mount.url"},
		{contract.MountSpec{Root: "task", URL: "file:///any/dir"}, "agent.mount.url"},
		{contract.MountSpec{Root: "task", Name: "nope"}, "agent.mount.name"},
		{contract.MountSpec{Root: "task", Name: "files", URL: "s3://bucket"}, "not both"},
		{contract.MountSpec{Root: "task"}, "needs"},
		{contract.MountSpec{Root: "Bad!", Name: "files"}, "agent.mount.root"},
	}
	for _, c := range refused {
		_, err := m.Resolve("agent.mount", c.spec)
		if contract.TypeOf(err) != contract.ErrInvalidInput || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v", c.spec, err)
		}
		if err != nil && strings.Contains(err.Error(), "10.0.0.5") {
			t.Errorf("the error repeats the caller's query: %v", err)
		}
	}
	if _, err := (Mounts(nil)).Resolve("agent.mount", contract.MountSpec{Root: "task", Name: "files"}); err == nil || !strings.Contains(err.Error(), "none are configured") {
		t.Errorf("no list: %v", err)
	}
}

func TestParseMounts(t *testing.T) {
	for _, bad := range []string{`[]`, `{"Files": "mem://"}`, `{"files": "ftp://x"}`, `{"files": "file:///"}`} {
		if _, err := ParseMounts(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	m, err := ParseMounts("")
	if err != nil || len(m) != 0 {
		t.Errorf("empty: %v %v", m, err)
	}
}
