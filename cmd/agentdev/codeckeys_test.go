package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/agenttask/agenttask/internal/codec"
)

// The data folder remembers the keys agentdev run encrypted with, and a
// start that lacks one of them is told which.
func TestCodecKeysOfTheDataFolder(t *testing.T) {
	dir := t.TempDir()
	k := make([]byte, codec.KeySize)
	c1, err := codec.New(codec.Keys{"k1": k}, "k1")
	if err != nil {
		t.Fatal(err)
	}
	c12, err := codec.New(codec.Keys{"k1": k, "k2": k}, "k2")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := codec.New(codec.Keys{"k2": k}, "k2")
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		c       *codec.Codec
		missing string
	}{
		{nil, ""},   // nothing recorded: nothing to say, nothing written
		{c1, ""},    // records k1
		{c1, ""},    // k1 again: recorded once
		{nil, "k1"}, // without keys
		{c12, ""},   // rotation: k2 current, k1 still listed; records k2
		{c2, "k1"},  // k1 dropped
	} {
		missing, err := checkCodecKeys(dir, step.c, zap.NewNop())
		if err != nil || strings.Join(missing, ",") != step.missing {
			t.Fatalf("keys %v: missing %v, %v; want %q", step.c.KeyIDs(), missing, err, step.missing)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, codecKeysFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "# ") || !strings.HasSuffix(string(b), "\nk1\nk2\n") || strings.Count(string(b), "k1\n") != 1 {
		t.Fatalf("%s:\n%s", codecKeysFile, b)
	}
}
