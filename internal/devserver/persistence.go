package devserver

import (
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/config"
	sqliteschema "go.temporal.io/server/schema/sqlite"
)

// Persistence is a SQL database other than the built-in SQLite, such as
// PostgreSQL: one store for executions, one for visibility (list queries
// and search attributes). The caller sets up both schemas (agentdev does it
// with Temporal's schema tool) and links the plugin (a blank import of
// go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql).
type Persistence struct {
	Default    *config.SQL
	Visibility *config.SQL
}

const (
	defaultStoreName    = "default"
	visibilityStoreName = "visibility"
)

// prepare creates the namespace, its search attributes seeded, when missing,
// as prepareSQLite does. Writing the row directly (the server's own helper
// takes any SQL plugin) lets the frontend serve it from its first request.
func (p *Persistence) prepare(clusterName, namespace string, attrs map[string]enumspb.IndexedValueType) error {
	if p.Default == nil || p.Visibility == nil {
		return fmt.Errorf("persistence: both the default and the visibility store are needed")
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, namespace, false, attrs)
	if err != nil {
		return fmt.Errorf("namespace config: %w", err)
	}
	if err := sqliteschema.CreateNamespaces(p.Default, ns); err != nil { // no-op when it exists
		return fmt.Errorf("create namespace %q: %w", namespace, err)
	}
	return nil
}

// apply points the server's stores at p; a nil p leaves c as it is.
func (p *Persistence) apply(c *config.Config) {
	if p == nil {
		return
	}
	c.Persistence.DefaultStore = defaultStoreName
	c.Persistence.VisibilityStore = visibilityStoreName
	c.Persistence.DataStores = map[string]config.DataStore{
		defaultStoreName:    {SQL: p.Default},
		visibilityStoreName: {SQL: p.Visibility},
	}
}
