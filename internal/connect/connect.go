// Package connect dials Temporal from the environment variables Temporal's
// own tools read, so the worker, the starter and the CLI agree on them.
package connect

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strconv"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/agenttask/agenttask/internal/codec"
)

// Env names (the Temporal CLI's).
const (
	EnvAddress            = "TEMPORAL_ADDRESS"
	EnvNamespace          = "TEMPORAL_NAMESPACE"
	EnvAPIKey             = "TEMPORAL_API_KEY"
	EnvTLS                = "TEMPORAL_TLS"
	EnvTLSCertPath        = "TEMPORAL_TLS_CERT_PATH"
	EnvTLSKeyPath         = "TEMPORAL_TLS_KEY_PATH"
	EnvTLSCAPath          = "TEMPORAL_TLS_CA_PATH"
	EnvTLSCertData        = "TEMPORAL_TLS_CERT_DATA"
	EnvTLSKeyData         = "TEMPORAL_TLS_KEY_DATA"
	EnvTLSCAData          = "TEMPORAL_TLS_CA_DATA"
	EnvTLSServerName      = "TEMPORAL_TLS_SERVER_NAME"
	EnvTLSDisableHostVrfy = "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"
)

// Defaults: the embedded dev server.
const (
	DefaultAddress   = "localhost:7233"
	DefaultNamespace = "default"
)

// Dial connects to Temporal with the options getenv gives.
func Dial(ctx context.Context, getenv func(string) string, logger log.Logger) (client.Client, client.Options, error) {
	opts, err := Options(getenv, logger)
	if err != nil {
		return nil, opts, err
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, opts, fmt.Errorf("connecting to Temporal at %s: %w", opts.HostPort, err)
	}
	return c, opts, nil
}

// Options reads client options from getenv (os.Getenv in binaries). When
// AGENT_CODEC_KEYS is set, payloads and failure messages are encrypted
// (package codec).
func Options(getenv func(string) string, logger log.Logger) (client.Options, error) {
	o := client.Options{
		HostPort:  or(getenv(EnvAddress), DefaultAddress),
		Namespace: or(getenv(EnvNamespace), DefaultNamespace),
		Logger:    logger,
	}
	cdc, err := codec.FromGetenv(getenv)
	if err != nil {
		return o, err
	}
	cdc.Apply(&o)
	if key := getenv(EnvAPIKey); key != "" {
		o.Credentials = client.NewAPIKeyStaticCredentials(key)
	}
	tlsCfg, err := tlsConfig(getenv)
	if err != nil {
		return o, err
	}
	// An API key implies TLS, as in Temporal's tools, unless TLS is turned off explicitly.
	if tlsCfg == nil && getenv(EnvAPIKey) != "" && getenv(EnvTLS) == "" {
		tlsCfg = &tls.Config{}
	}
	o.ConnectionOptions.TLS = tlsCfg
	return o, nil
}

func tlsConfig(getenv func(string) string) (*tls.Config, error) {
	enabled := false
	if v := getenv(EnvTLS); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: want true or false", EnvTLS, v)
		}
		enabled = b
		if !b {
			return nil, nil
		}
	}
	cert, err := pem(getenv, EnvTLSCertPath, EnvTLSCertData)
	if err != nil {
		return nil, err
	}
	key, err := pem(getenv, EnvTLSKeyPath, EnvTLSKeyData)
	if err != nil {
		return nil, err
	}
	ca, err := pem(getenv, EnvTLSCAPath, EnvTLSCAData)
	if err != nil {
		return nil, err
	}
	if !enabled && cert == nil && key == nil && ca == nil && getenv(EnvTLSServerName) == "" && getenv(EnvTLSDisableHostVrfy) == "" {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: getenv(EnvTLSServerName)}
	if v := getenv(EnvTLSDisableHostVrfy); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: want true or false", EnvTLSDisableHostVrfy, v)
		}
		cfg.InsecureSkipVerify = b
	}
	if (cert == nil) != (key == nil) {
		return nil, fmt.Errorf("a client certificate needs both %s and %s (or the _DATA forms)", EnvTLSCertPath, EnvTLSKeyPath)
	}
	if cert != nil {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("%s / %s: no certificate found", EnvTLSCAPath, EnvTLSCAData)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

func pem(getenv func(string) string, pathVar, dataVar string) ([]byte, error) {
	if d := getenv(dataVar); d != "" {
		return []byte(d), nil
	}
	if p := getenv(pathVar); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pathVar, err)
		}
		return b, nil
	}
	return nil, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
