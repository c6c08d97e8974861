// Package a2apush sends A2A v1.0 push notifications: a caller of our A2A
// server (internal/tasksapi/a2a.go) names a webhook for one of its tasks,
// and a durable workflow follows that task and posts each change to the
// webhook, signed and retried, never to a private or loopback address
// unless the operator allows it (docs/a2a.md).
package a2apush

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// Environment of the Tasks API.
const (
	// EnvAllowPrivate ("true") lets webhooks reach private, loopback and
	// link-local addresses (a webhook on the operator's own network).
	EnvAllowPrivate = "AGENT_A2A_PUSH_ALLOW_PRIVATE"
	// EnvSigningKey, when set, signs every notification: the header
	// X-Agenttask-Signature carries "sha256=" and the hex HMAC-SHA256 of
	// "<timestamp>.<body>" under this key, X-Agenttask-Timestamp the Unix
	// seconds it was signed at.
	EnvSigningKey = "AGENT_A2A_PUSH_SIGNING_KEY"
)

// Bounds of what a caller may configure.
const (
	MaxConfigsPerTask = 10
	maxURLBytes       = 2048
	maxTokenBytes     = 1024
)

// Config is a push notification configuration, in A2A v1.0's JSON
// (TaskPushNotificationConfig).
type Config struct {
	ID             string          `json:"id"`
	TaskID         string          `json:"taskId"`
	URL            string          `json:"url"`
	Token          string          `json:"token,omitempty"`
	Authentication *Authentication `json:"authentication,omitempty"`
}

// Authentication is sent as "Authorization: <scheme> <credentials>".
type Authentication struct {
	Scheme      string `json:"scheme"`
	Credentials string `json:"credentials"`
}

// Options are the operator's (EnvAllowPrivate, EnvSigningKey).
type Options struct {
	AllowPrivate bool
	SigningKey   []byte
}

// OptionsFromEnv reads the operator's options.
func OptionsFromEnv(getenv func(string) string) (Options, error) {
	var o Options
	switch v := strings.TrimSpace(getenv(EnvAllowPrivate)); v {
	case "", "false":
	case "true":
		o.AllowPrivate = true
	default:
		return o, fmt.Errorf("%s: %q is not true or false", EnvAllowPrivate, v)
	}
	if k := getenv(EnvSigningKey); k != "" {
		if len(k) < 16 {
			return o, fmt.Errorf("%s: a signing key of %d bytes is too short; use at least 16 random bytes", EnvSigningKey, len(k))
		}
		o.SigningKey = []byte(k)
	}
	return o, nil
}

// Check refuses a configuration the sender could not or must not use,
// with what to send instead.
func (o Options) Check(ctx context.Context, c Config) error {
	switch {
	case c.URL == "" || len(c.URL) > maxURLBytes:
		return fmt.Errorf("url: the webhook's http:// or https:// URL, at most %d bytes", maxURLBytes)
	case len(c.Token) > maxTokenBytes || strings.ContainsAny(c.Token, "\r\n\x00") || !utf8.ValidString(c.Token):
		return fmt.Errorf("token: at most %d bytes on one line", maxTokenBytes)
	case c.Authentication != nil && (strings.ContainsAny(c.Authentication.Scheme+c.Authentication.Credentials, "\r\n\x00") || strings.ContainsAny(c.Authentication.Scheme, " \t") || c.Authentication.Scheme == ""):
		return errors.New("authentication: a scheme (one word, such as Bearer) and credentials, on one line")
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		return fmt.Errorf("url: %q is not an http:// or https:// URL without credentials in it", c.URL)
	}
	if o.AllowPrivate {
		return nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil {
		return fmt.Errorf("url: the host %q does not resolve: %v", u.Hostname(), err)
	}
	for _, a := range addrs {
		if private(a) {
			return fmt.Errorf("url: %q resolves to %s, a private, loopback or link-local address, which this API does not post to (its operator may allow it with %s=true)", u.Hostname(), a, EnvAllowPrivate)
		}
	}
	return nil
}

// private: an address a webhook must not reach unless the operator allows
// it (the server's own network, its cloud's metadata service).
func private(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast() ||
		slices.ContainsFunc(blocked, func(p netip.Prefix) bool { return p.Contains(a) })
}

// blocked are further ranges no webhook may reach: carrier-grade NAT (used
// inside clouds), "this network", benchmarking, reserved, and NAT64 (which
// maps any IPv4 address, private ones too).
var blocked = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"), netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("64:ff9b:1::/48"),
}
