package a2apush

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// Sender posts notifications. Its dialer refuses private addresses at
// connect time too (unless allowed), so a host that resolved to a public
// address when configured cannot be pointed at a private one later.
type Sender struct {
	opts Options
	http *http.Client
}

// sendTimeout bounds one post.
const sendTimeout = 10 * time.Second

// NewSender posts with opts.
func NewSender(opts Options) *Sender {
	d := &net.Dialer{Timeout: sendTimeout}
	if !opts.AllowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || private(ap.Addr()) {
				return fmt.Errorf("refusing to post a notification to %s: a private, loopback or link-local address (%s=true allows it)", address, EnvAllowPrivate)
			}
			return nil
		}
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = d.DialContext
	t.Proxy = nil // a proxy would dial for us, past the check
	return &Sender{opts: opts, http: &http.Client{Transport: t, Timeout: sendTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// PermanentError is a webhook's refusal no retry fixes (an HTTP 4xx other
// than 408 and 429).
type PermanentError struct{ Status int }

func (e *PermanentError) Error() string {
	return fmt.Sprintf("the webhook answered HTTP %d", e.Status)
}

// Send posts body (a StreamResponse, JSON) to c's webhook, with its token
// and authentication, signed when the operator set a key. now is the
// signature's time.
func (s *Sender) Send(ctx context.Context, c Config, body []byte, now time.Time) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return &PermanentError{Status: 0}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	if c.Token != "" {
		req.Header.Set("X-A2A-Notification-Token", c.Token)
	}
	if a := c.Authentication; a != nil {
		req.Header.Set("Authorization", a.Scheme+" "+a.Credentials)
	}
	if len(s.opts.SigningKey) > 0 {
		ts := strconv.FormatInt(now.Unix(), 10)
		req.Header.Set("X-Agenttask-Timestamp", ts)
		req.Header.Set("X-Agenttask-Signature", "sha256="+Sign(s.opts.SigningKey, ts, body))
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("posting to the webhook: %v", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch s := resp.StatusCode; {
	case s/100 == 2:
		return nil
	case s >= 400 && s < 500 && s != http.StatusRequestTimeout && s != http.StatusTooManyRequests:
		return &PermanentError{Status: s}
	}
	return fmt.Errorf("the webhook answered HTTP %d", resp.StatusCode)
}

// Sign is the hex HMAC-SHA256 of "<timestamp>.<body>" under key: what a
// webhook computes to check X-Agenttask-Signature.
func Sign(key []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(timestamp + "."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}
