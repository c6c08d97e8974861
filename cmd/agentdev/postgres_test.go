package main

import (
	"testing"

	"go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
)

func TestParsePostgresURL(t *testing.T) {
	p, err := parsePostgresURL("postgres://tem%40poral:p%2Fw@db.example:6543/agents?sslmode=require&plugin=postgres12_pgx")
	if err != nil {
		t.Fatal(err)
	}
	d, v := p.Default, p.Visibility
	if d.User != "tem@poral" || d.Password != "p/w" || d.ConnectAddr != "db.example:6543" || d.DatabaseName != "agents" || d.PluginName != postgresql.PluginNamePGX {
		t.Errorf("default store: %+v", d)
	}
	if v.DatabaseName != "agents_visibility" || v.ConnectAttributes["sslmode"] != "require" || len(v.ConnectAttributes) != 1 {
		t.Errorf("visibility store: %+v", v)
	}
	p, err = parsePostgresURL("postgresql://u:p@localhost/t?visibility=tv")
	if err != nil {
		t.Fatal(err)
	}
	if p.Default.ConnectAddr != "localhost:5432" || p.Default.PluginName != postgresql.PluginName || p.Visibility.DatabaseName != "tv" {
		t.Errorf("defaults: %+v %+v", p.Default, p.Visibility)
	}
	for _, bad := range []string{
		"postgres:///db",                    // no host
		"postgres://u:p@h:5432",             // no database
		"postgres://u:p@h:5432/a/b",         // two
		"postgres://u:p@h/db?plugin=mysql8", // not PostgreSQL
		"postgres://u:p@h/db?visibility=db", // one database for both
	} {
		if _, err := parsePostgresURL(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	for db, want := range map[string]bool{"postgres://h/db": true, "postgresql://h/db": true, "data/temporal.db": false, "": false} {
		if isPostgresURL(db) != want {
			t.Errorf("isPostgresURL(%q) = %v", db, !want)
		}
	}
}
