package a2apush

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCheckRefusesPrivateAndMalformedWebhooks(t *testing.T) {
	ctx := context.Background()
	strict := Options{}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{URL: "http://127.0.0.1:9/hook"}, "a private, loopback or link-local address"},
		{Config{URL: "http://169.254.169.254/latest/meta-data"}, "a private, loopback or link-local address"},
		{Config{URL: "http://10.1.2.3/hook"}, "a private, loopback or link-local address"},
		{Config{URL: "http://[::1]/hook"}, "a private, loopback or link-local address"},
		{Config{URL: "http://localhost/hook"}, "a private, loopback or link-local address"},
		{Config{URL: "ftp://example.com/hook"}, "is not an http:// or https:// URL"},
		{Config{URL: "https://u:p@example.com/hook"}, "without credentials"},
		{Config{URL: ""}, "url: the webhook's"},
		{Config{URL: "https://example.com/hook", Token: "a\nb"}, "token: at most"},
		{Config{URL: "https://example.com/hook", Authentication: &Authentication{Scheme: "Bearer x", Credentials: "c"}}, "authentication: a scheme (one word"},
	} {
		err := strict.Check(ctx, c.cfg)
		require.ErrorContains(t, err, c.want, c.cfg.URL)
	}
	require.NoError(t, Options{AllowPrivate: true}.Check(ctx, Config{URL: "http://127.0.0.1:9/hook"}), "the operator allows it")
	require.Contains(t, strict.Check(ctx, Config{URL: "http://127.0.0.1/"}).Error(), EnvAllowPrivate, "the error names the way out")
}

func TestOptionsFromEnv(t *testing.T) {
	o, err := OptionsFromEnv(func(k string) string {
		return map[string]string{EnvAllowPrivate: "true", EnvSigningKey: "0123456789abcdef"}[k]
	})
	require.NoError(t, err)
	require.True(t, o.AllowPrivate)
	require.Equal(t, []byte("0123456789abcdef"), o.SigningKey)
	_, err = OptionsFromEnv(func(k string) string { return map[string]string{EnvAllowPrivate: "yes"}[k] })
	require.ErrorContains(t, err, "is not true or false")
	_, err = OptionsFromEnv(func(k string) string { return map[string]string{EnvSigningKey: "short"}[k] })
	require.ErrorContains(t, err, "too short")
}

func TestSenderSignsAndClassifies(t *testing.T) {
	var got http.Header
	var body string
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		w.WriteHeader(status)
	}))
	defer srv.Close()
	key := []byte("0123456789abcdef")
	s := NewSender(Options{AllowPrivate: true, SigningKey: key})
	c := Config{URL: srv.URL, Token: "tok", Authentication: &Authentication{Scheme: "Bearer", Credentials: "cred"}}
	now := time.Unix(1_800_000_000, 0)
	require.NoError(t, s.Send(context.Background(), c, []byte(`{"statusUpdate":{}}`), now))
	require.Equal(t, `{"statusUpdate":{}}`, body)
	require.Equal(t, "tok", got.Get("X-A2A-Notification-Token"))
	require.Equal(t, "Bearer cred", got.Get("Authorization"))
	require.Equal(t, "1800000000", got.Get("X-Agenttask-Timestamp"))
	require.Equal(t, "sha256="+Sign(key, "1800000000", []byte(body)), got.Get("X-Agenttask-Signature"))

	status = http.StatusGone
	err := s.Send(context.Background(), c, []byte(`{}`), now)
	var perm *PermanentError
	require.ErrorAs(t, err, &perm, "a 4xx is not retried")
	status = http.StatusServiceUnavailable
	err = s.Send(context.Background(), c, []byte(`{}`), now)
	require.Error(t, err)
	require.NotErrorAs(t, err, &perm, "a 5xx is retried")

	// Without the operator's allowance the dialer refuses loopback, whatever
	// the URL's host said when it was configured.
	err = NewSender(Options{}).Send(context.Background(), c, []byte(`{}`), now)
	require.ErrorContains(t, err, "refusing to post a notification")
	require.True(t, strings.Contains(err.Error(), EnvAllowPrivate))
}
