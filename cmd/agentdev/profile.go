package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/agenttask/agenttask/internal/devserver"
)

// EnvProfile is the default of --profile.
const EnvProfile = "AGENTDEV_PROFILE"

// dynamicConfig is the server's dynamic-config flags of `run` and `server`.
type dynamicConfig struct {
	profile *string
	values  map[string]any
}

func dynamicConfigFlags(fs *flag.FlagSet) *dynamicConfig {
	dc := &dynamicConfig{values: map[string]any{}}
	// The environment can choose too: `make run` passes no flags.
	def := os.Getenv(EnvProfile)
	if def == "" {
		def = devserver.ProfileThroughput
	}
	dc.profile = fs.String("profile", def,
		"the server's dynamic-config profile `NAME`: "+strings.Join(devserver.ProfileNames(), " or ")+
			" ($"+EnvProfile+" sets the default; agentdev profile NAME lists its settings)")
	fs.Func("dynamic-config-value", "set a dynamic-config `KEY=VALUE` over the profile (VALUE is JSON, else a string); repeatable",
		func(kv string) error {
			k, v, err := devserver.ParseDynamicConfigValue(kv)
			if err == nil {
				dc.values[k] = v
			}
			return err
		})
	return dc
}

// printProfile is `agentdev profile [-json] [NAME]`: the settings a
// profile adds to Temporal's defaults (the bench reads the JSON).
func printProfile(args []string) error {
	fs := flag.NewFlagSet("agentdev profile", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the settings as a JSON array of {key, value, default, why}")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("profile: one profile name at most, got %q", fs.Args())
	}
	name := fs.Arg(0)
	settings, err := devserver.Profile(name)
	if err != nil {
		return err
	}
	if *asJSON {
		if settings == nil {
			settings = []devserver.Setting{}
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(settings)
	}
	if len(settings) == 0 {
		fmt.Println("no settings: Temporal's defaults")
		return nil
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KEY\tVALUE\tDEFAULT\tWHY")
	for _, s := range settings {
		fmt.Fprintf(w, "%s\t%v\t%v\t%s\n", s.Key, s.Value, s.Default, s.Why)
	}
	return w.Flush()
}
