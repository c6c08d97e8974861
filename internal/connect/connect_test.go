package connect

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestDefaultsAreTheDevServer(t *testing.T) {
	o, err := Options(env(nil), nil)
	require.NoError(t, err)
	require.Equal(t, "localhost:7233", o.HostPort)
	require.Equal(t, "default", o.Namespace)
	require.Nil(t, o.ConnectionOptions.TLS)
	require.Nil(t, o.Credentials)
}

func TestAPIKeyImpliesTLSUnlessTurnedOff(t *testing.T) {
	o, err := Options(env(map[string]string{EnvAPIKey: "k", EnvAddress: "x.tmprl.cloud:7233", EnvNamespace: "ns.acct"}), nil)
	require.NoError(t, err)
	require.NotNil(t, o.Credentials)
	require.NotNil(t, o.ConnectionOptions.TLS)
	require.Equal(t, "ns.acct", o.Namespace)
	o, err = Options(env(map[string]string{EnvAPIKey: "k", EnvTLS: "false"}), nil)
	require.NoError(t, err)
	require.Nil(t, o.ConnectionOptions.TLS)
}

func TestBadTLSSettingsAreErrors(t *testing.T) {
	for _, kv := range []map[string]string{
		{EnvTLS: "yes please"},
		{EnvTLSDisableHostVrfy: "maybe"},
		{EnvTLSKeyData: "-----BEGIN PRIVATE KEY-----"},
		{EnvTLSCAData: "not a pem"},
		{EnvTLSCertPath: "/does/not/exist"},
	} {
		_, err := Options(env(kv), nil)
		require.Error(t, err, "%v", kv)
	}
}
