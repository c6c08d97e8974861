package devserver

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/config"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	sqliteschema "go.temporal.io/server/schema/sqlite"
)

// prepareSQLite returns the persistence config for file (or memory when file
// is "") and makes sure the schema and namespace exist. An existing file is
// reused as is, so workflows survive restarts.
func prepareSQLite(file, clusterName, namespace string, attrs map[string]enumspb.IndexedValueType) (*config.SQL, error) {
	cfg := &config.SQL{PluginName: sqliteplugin.PluginName}
	if file == "" {
		// The plugin creates the schema itself for memory databases. The
		// name is random so two servers in one process do not share state.
		cfg.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
		cfg.DatabaseName = strconv.Itoa(rand.IntN(1e9))
	} else {
		cfg.ConnectAttributes = map[string]string{"mode": "rwc"}
		cfg.DatabaseName = file
		if err := setupSchemaIfNew(cfg, file); err != nil {
			return nil, err
		}
	}

	// Seeding the attributes into a new namespace makes them usable at once;
	// ensureSearchAttributes later adds any that an older file lacks.
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, namespace, false, attrs)
	if err != nil {
		return nil, fmt.Errorf("namespace config: %w", err)
	}
	if err := sqliteschema.CreateNamespaces(cfg, ns); err != nil { // no-op when it exists
		return nil, fmt.Errorf("create namespace %q: %w", namespace, err)
	}
	return cfg, nil
}

// setupSchemaIfNew creates the tables when file is missing or empty. A file
// whose setup failed half way is removed so the next start retries cleanly.
func setupSchemaIfNew(cfg *config.SQL, file string) error {
	st, err := os.Stat(file)
	switch {
	case err == nil && st.Size() > 0:
		return nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("database file: %w", err)
	}
	if _, err := os.Stat(filepath.Dir(file)); err != nil {
		return fmt.Errorf("database directory: %w", err)
	}
	if err := sqliteschema.SetupSchema(cfg); err != nil {
		_ = os.Remove(file)
		return fmt.Errorf("set up schema in %s: %w", file, err)
	}
	return nil
}
