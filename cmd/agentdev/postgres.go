package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/tools/common/schema"
	sqltool "go.temporal.io/server/tools/sql"
	"go.uber.org/zap"

	"github.com/agenttask/agenttask/internal/devserver"
)

// A --db value that is a postgres:// (or postgresql://) URL runs the
// server on PostgreSQL (12 or newer):
//
//	postgres://USER:PASSWORD@HOST[:PORT]/DBNAME[?PARAM=VALUE...]
//
// DBNAME holds the executions; visibility (list queries, search
// attributes) goes to DBNAME_visibility, or to the database named by the
// parameter visibility. The parameter plugin chooses the server's driver:
// postgres12 (lib/pq, the default) or postgres12_pgx. Every other
// parameter (sslmode, sslrootcert, ...) is passed to the driver as is.

// isPostgresURL tells a PostgreSQL URL from a SQLite file name.
func isPostgresURL(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// Connection pool sizes per store and per server service (four services in
// the process): at most 4×(10+5) connections, well under PostgreSQL's
// default max_connections of 100.
const (
	pgMaxConns           = 10
	pgMaxVisibilityConns = 5
)

// parsePostgresURL turns a --db URL into the server's two SQL stores.
func parsePostgresURL(raw string) (*devserver.Persistence, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("--db: %w", err)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("--db %s: no host (postgres://USER:PASSWORD@HOST:PORT/DBNAME)", redact(u))
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "5432")
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("--db %s: name one database after the host (postgres://USER:PASSWORD@HOST:PORT/DBNAME)", redact(u))
	}
	q := u.Query()
	plugin := postgresql.PluginName
	if p := q.Get("plugin"); p != "" {
		if p != postgresql.PluginName && p != postgresql.PluginNamePGX {
			return nil, fmt.Errorf("--db: plugin %q: want %s or %s", p, postgresql.PluginName, postgresql.PluginNamePGX)
		}
		plugin = p
	}
	visibility := name + "_visibility"
	if v := q.Get("visibility"); v != "" {
		visibility = v
	}
	if visibility == name {
		return nil, fmt.Errorf("--db: the visibility database must differ from %q", name)
	}
	attrs := map[string]string{}
	for k, vs := range q {
		if k != "plugin" && k != "visibility" && len(vs) > 0 {
			attrs[k] = vs[len(vs)-1]
		}
	}
	password, _ := u.User.Password()
	store := func(db string, conns int) *config.SQL {
		a := make(map[string]string, len(attrs))
		for k, v := range attrs {
			a[k] = v
		}
		return &config.SQL{
			PluginName:        plugin,
			User:              u.User.Username(),
			Password:          password,
			ConnectAddr:       host,
			ConnectProtocol:   "tcp",
			DatabaseName:      db,
			ConnectAttributes: a,
			MaxConns:          conns,
			MaxIdleConns:      conns,
			MaxConnLifetime:   time.Hour,
		}
	}
	return &devserver.Persistence{
		Default:    store(name, pgMaxConns),
		Visibility: store(visibility, pgMaxVisibilityConns),
	}, nil
}

// redact hides a URL's password in messages.
func redact(u *url.URL) string { return u.Redacted() }

// The embedded schemas of go.temporal.io/server, as temporal-sql-tool's
// --schema-name names them.
const (
	pgSchema           = "postgresql/v12/temporal"
	pgVisibilitySchema = "postgresql/v12/visibility"
)

// setupPostgres does what these do with temporal-sql-tool, for both
// databases:
//
//	temporal-sql-tool create-database            (when it does not exist)
//	temporal-sql-tool setup-schema -v 0.0        (the version tables)
//	temporal-sql-tool update-schema --schema-name postgresql/v12/...
//
// with the same code (go.temporal.io/server/tools). Run again on a
// database at the latest version, it changes nothing; on an older one it
// applies the newer versions' changes.
func setupPostgres(p *devserver.Persistence, zl *zap.Logger) error {
	logger := log.NewZapLogger(zl.Named("schema").WithOptions(zap.WithCaller(false)))
	for _, s := range []struct {
		cfg    *config.SQL
		schema string
	}{{p.Default, pgSchema}, {p.Visibility, pgVisibilitySchema}} {
		if err := setupDatabase(s.cfg, s.schema, logger); err != nil {
			return fmt.Errorf("PostgreSQL database %s on %s: %w", s.cfg.DatabaseName, s.cfg.ConnectAddr, err)
		}
	}
	return nil
}

func setupDatabase(cfg *config.SQL, schemaName string, logger log.Logger) error {
	// create-database, from the server's maintenance database: a no-op when
	// the database exists. A role without CREATEDB, whose database an
	// administrator made, fails here harmlessly.
	admin := *cfg
	createErr := sqltool.DoCreateDatabase(&admin, "postgres", logger)
	conn, err := sqltool.NewConnection(cfg, logger)
	if err != nil {
		return errors.Join(err, createErr)
	}
	defer conn.Close()
	if err := conn.Exec("SELECT 1"); err != nil {
		if createErr != nil {
			return errors.Join(err, fmt.Errorf("create database: %w", createErr))
		}
		return err
	}
	setup := &schema.SetupConfig{InitialVersion: "0.0"}
	if err := schema.NewSetupSchemaTask(conn, setup, logger).Run(); err != nil {
		return fmt.Errorf("setup-schema: %w", err)
	}
	update := &schema.UpdateConfig{DBName: cfg.DatabaseName, SchemaName: schemaName}
	if err := schema.NewUpdateSchemaTask(conn, update, logger).Run(); err != nil {
		return fmt.Errorf("update-schema: %w", err)
	}
	return nil
}
