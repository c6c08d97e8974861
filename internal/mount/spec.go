package mount

import (
	"net/url"
	"strings"

	"github.com/agenttask/agenttask/contract"
)

// Spec is an agent's mount, as AgentSpec.mount holds it: the root of its
// references and the gocloud.dev/blob URL of the storage. Every task of the
// agent has its own space inside that storage.
type Spec struct {
	Root string `json:"root"`
	URL  string `json:"url"`
}

// CheckSpec checks the root name and that the URL is a file://, mem://, s3://
// or gs:// bucket URL. It only parses: nothing is opened or contacted.
func CheckSpec(s Spec) error {
	if err := CheckRoot(s.Root); err != nil {
		return err
	}
	_, err := parseMountURL(s.URL)
	return err
}

// parseMountURL parses and checks a mount URL.
func parseMountURL(raw string) (*url.URL, error) {
	const hint = "use file:///absolute/folder, s3://bucket, gs://bucket or mem:// (tests)"
	if raw == "" {
		return nil, contract.Invalid("mount url is empty; %s", hint)
	}
	if !strings.Contains(raw, "://") {
		return nil, contract.Invalid("mount url %q is not a URL; %s", raw, hint)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, contract.Invalid("mount url %q does not parse (%v); %s", raw, err, hint)
	}
	if u.Fragment != "" || u.User != nil {
		return nil, contract.Invalid("mount url %q: no user info or #fragment; %s", raw, hint)
	}
	switch u.Scheme {
	case "file":
		switch u.Host {
		case "", "localhost":
			if u.Path == "" || u.Path == "/" {
				return nil, contract.Invalid("mount url %q names no folder (or the file system root); write file:///absolute/folder", raw)
			}
		case ".": // fileblob's relative form: file://./folder
		default:
			return nil, contract.Invalid("mount url %q: %q would be read as a host, not a folder; write file:///absolute/folder (three slashes)", raw, u.Host)
		}
	case "s3", "gs":
		if u.Host == "" {
			return nil, contract.Invalid("mount url %q names no bucket; write %s://bucket-name", raw, u.Scheme)
		}
	case "mem":
	default:
		return nil, contract.Invalid("mount url %q: scheme %q is not supported; %s", raw, u.Scheme, hint)
	}
	return u, nil
}

// openURL returns the URL to open: for local folders it adds the defaults
// transcript.Open uses (create the folder, temporary files beside the target
// so a rename publishes a complete object, no metadata sidecar files) unless
// the URL sets those fileblob parameters itself.
func openURL(u *url.URL) string {
	if u.Scheme != "file" {
		return u.String()
	}
	c := *u
	q := c.Query()
	for k, v := range map[string]string{"create_dir": "1", "no_tmp_dir": "1", "metadata": "skip"} {
		if _, set := q[k]; !set {
			q.Set(k, v)
		}
	}
	c.RawQuery = q.Encode()
	return c.String()
}
