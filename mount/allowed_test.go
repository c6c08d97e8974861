package mount

import (
	"strings"
	"testing"

	"github.com/agenttask/agenttask/schema"
)

func TestMountsResolve(t *testing.T) {
	m, err := ParseMounts(`{"files": "s3://bucket?region=eu-west-1&awssdk=v2", "local": "file:///var/lib/agenttask/files"}`)
	if err != nil {
		t.Fatal(err)
	}
	ok := []struct {
		spec schema.MountSpec
		url  string
	}{
		{schema.MountSpec{Root: "task", Name: "files"}, "s3://bucket?region=eu-west-1&awssdk=v2"},
		{schema.MountSpec{Root: "task", URL: "s3://bucket?awssdk=v2&region=eu-west-1"}, "s3://bucket?region=eu-west-1&awssdk=v2"},
		{schema.MountSpec{Root: "docs", URL: "file:///var/lib/agenttask/files/"}, "file:///var/lib/agenttask/files"},
	}
	for _, c := range ok {
		got, err := m.Resolve("agent.mount", c.spec)
		if err != nil || got.URL != c.url || got.Root != c.spec.Root {
			t.Errorf("%+v: %+v %v", c.spec, got, err)
		}
	}
	refused := []struct {
		spec schema.MountSpec
		want string
	}{
		{schema.MountSpec{Root: "task", URL: "s3://bucket?region=eu-west-1&awssdk=v2&endpoint=http://10.0.0.5"}, "agent.mount.url"},
		{schema.MountSpec{Root: "task", URL: "s3://bucket?region=eu-west-1"}, "agent.mount.url"},
		{schema.MountSpec{Root: "task", URL: "s3://other-tenant"}, "agent.mount.url"},
		{schema.MountSpec{Root: "task", URL: "file:///any/dir"}, "agent.mount.url"},
		{schema.MountSpec{Root: "task", Name: "nope"}, "agent.mount.name"},
		{schema.MountSpec{Root: "task", Name: "files", URL: "s3://bucket"}, "not both"},
		{schema.MountSpec{Root: "task"}, "needs"},
		{schema.MountSpec{Root: "Bad!", Name: "files"}, "agent.mount.root"},
	}
	for _, c := range refused {
		_, err := m.Resolve("agent.mount", c.spec)
		if schema.TypeOf(err) != schema.ErrInvalidInput || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v", c.spec, err)
		}
		if err != nil && strings.Contains(err.Error(), "10.0.0.5") {
			t.Errorf("the error repeats the caller's query: %v", err)
		}
	}
	if _, err := (Mounts(nil)).Resolve("agent.mount", schema.MountSpec{Root: "task", Name: "files"}); err == nil || !strings.Contains(err.Error(), "none are configured") {
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
