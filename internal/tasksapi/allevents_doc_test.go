package tasksapi

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// docs/streaming.md's table of the full vocabulary lists every type the
// API relays, each with the schema component that describes it, and no
// other: the table, the Go types and the OpenAPI description agree.
func TestTheEveryEventTableAgreesWithTheTypes(t *testing.T) {
	doc, err := os.ReadFile("../../docs/streaming.md")
	require.NoError(t, err)
	section := string(doc)[strings.Index(string(doc), "## Every event"):]
	section = section[:strings.Index(section[3:], "\n## ")+3]
	rows := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") || strings.TrimSpace(cells[1]) == "`type`" {
			continue
		}
		typ := strings.Trim(strings.TrimSpace(cells[1]), "`")
		rows[typ] = strings.Trim(strings.TrimSpace(cells[2]), "`")
	}
	require.Len(t, rows, len(allEventOrder), "the table's rows: %v", rows)
	spec, err := os.ReadFile("openapi.json")
	require.NoError(t, err)
	for _, typ := range allEventOrder {
		component := reflect.TypeOf(allEventTypes[typ]).Name()
		require.Equal(t, component, rows[typ], "the row of %s", typ)
		require.Contains(t, string(spec), `"#/components/schemas/`+component+`"`, "StreamEventAll names %s", component)
		require.Contains(t, string(spec), `"`+typ+`"`, "the discriminator maps %s", typ)
	}
}
