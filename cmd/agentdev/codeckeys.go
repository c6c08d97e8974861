package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/agenttask/agenttask/internal/codec"
)

// codecKeysFile, in the data folder, lists the IDs of the keys `agentdev
// run` has encrypted with there (AGENT_CODEC_KEY_ID, one a line): what the
// folder's database, transcripts and broker may hold data under. A start
// whose AGENT_CODEC_KEYS leaves one of them out says so before anything
// else; the workflows written under it would otherwise stop at their next
// workflow task.
const codecKeysFile = "codec-keys"

const codecKeysHeader = `# The keys agentdev run has encrypted with in this data folder (AGENT_CODEC_KEY_ID),
# one ID a line. agentdev run warns at start when AGENT_CODEC_KEYS leaves one out.
# Delete a line once nothing written under that key is read any more.
`

// checkCodecKeys reads the data folder's record of keys, warns on stderr
// (and in the log at error level) about each recorded key c does not hold,
// and records c's current key. It returns the keys missing.
func checkCodecKeys(dataDir string, c *codec.Codec, z *zap.Logger) ([]string, error) {
	path := filepath.Join(dataDir, codecKeysFile)
	recorded, err := readCodecKeys(path)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, id := range recorded {
		if !slices.Contains(c.KeyIDs(), id) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		quoted := make([]string, len(missing))
		for i, id := range missing {
			quoted[i] = fmt.Sprintf("%q", id)
		}
		key, it, its := "key", "it", "its line"
		if len(missing) > 1 {
			key, it, its = "keys", "them", "their lines"
		}
		given := codec.EnvKeys + " is not set"
		if c != nil {
			given = fmt.Sprintf("%s (%s) does not list %s", codec.EnvKeys, strings.Join(c.KeyIDs(), ", "), it)
		}
		msg := fmt.Sprintf("%s holds data encrypted with %s %s (listed in %s), and %s: the tasks, stored prompts and transcripts written under %s "+
			"cannot be read, and their workflows stop (retried, nothing is lost) until agentdev run starts again with %s listing %s. "+
			"If nothing written under %s is needed any more, delete %s from %s",
			dataDir, key, strings.Join(quoted, ", "), path, given, it, codec.EnvKeys, it, it, its, path)
		fmt.Fprintln(os.Stderr, "Warning: "+msg)
		z.Error("the data folder holds data encrypted with keys this process does not hold", zap.Strings("key_ids", missing),
			zap.String("variable", codec.EnvKeys), zap.String("record", path))
	}
	if c != nil && !slices.Contains(recorded, c.CurrentKeyID()) {
		if err := appendCodecKey(path, len(recorded) == 0, c.CurrentKeyID()); err != nil {
			return missing, err
		}
	}
	return missing, nil
}

func readCodecKeys(path string) ([]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			ids = append(ids, line)
		}
	}
	return ids, sc.Err()
}

func appendCodecKey(path string, first bool, id string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		first = true
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("recording the codec key in %s: %w", path, err)
	}
	line := id + "\n"
	if first {
		line = codecKeysHeader + line
	}
	if _, err := f.WriteString(line); err != nil {
		_ = f.Close()
		return fmt.Errorf("recording the codec key in %s: %w", path, err)
	}
	return f.Close()
}

// reportMissingKeys logs every key the stack meets data under and does not
// hold at error level, and, while the logs go to a file, prints a line on
// stderr too: the console is where a person running make run looks.
func reportMissingKeys(z *zap.Logger, logs consoleLogs) {
	codec.ReportMissingKeys(func(m codec.MissingKey) {
		z.Error("data encrypted with a key this process does not hold: list it in "+codec.EnvKeys+" and restart; "+
			"workflows that need it fail their workflow tasks (retried, nothing is lost) until then",
			zap.String("key_id", m.KeyID), zap.String("variable", codec.EnvKeys), zap.String("error", m.Err.Error()), zap.Int("times", m.Count), zap.Time("first", m.First))
		if logs.file != "" {
			fmt.Fprintf(os.Stderr, "Error: key %q missing: %s (also on the Tasks API's /healthz)\n",
				m.KeyID, strings.TrimPrefix(m.Err.Error(), "codec: "))
		}
	})
}
