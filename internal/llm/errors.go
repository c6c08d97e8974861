package llm

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Error is every failure of Complete. It classifies the failure so the caller
// (the activity) can decide whether another attempt can help.
type Error struct {
	// Retryable is true for 401, 403, 408, 429, 5xx, a context-length 400,
	// timeouts, connection errors, cancellation and a provider this worker
	// does not serve (credentials and configuration get fixed while a task
	// waits); false for other 4xx, malformed answers and bad requests.
	Retryable bool
	// ContextLength: the endpoint refused the request as longer than the
	// model's context window.
	ContextLength bool
	// StatusCode is the HTTP status, 0 when there was no HTTP response.
	StatusCode int
	// RetryAfter is the wait the endpoint asked for, 0 if it asked for none.
	RetryAfter time.Duration
	// Message names the provider, status and the endpoint's own message. It
	// never contains the API key.
	Message string

	cause error
}

func (e *Error) Error() string { return e.Message }

// Unwrap exposes the underlying cause (e.g. context.Canceled) to errors.Is.
func (e *Error) Unwrap() error { return e.cause }

// retryableStatus reports whether an HTTP status is worth another attempt.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return true
	}
	return code >= 500
}

// contextLengthRE matches the ways OpenAI-compatible servers say a request is
// over the model's context: OpenAI's code and message, vLLM, llama.cpp, Ollama,
// Anthropic ("prompt is too long") and Gemini ("input token count ... exceeds").
var contextLengthRE = regexp.MustCompile(`(?i)context_length_exceeded|prompt is too long|input token count.*exceeds|maximum context length|context length|context window|too many tokens|exceeds the context`)

// isContextLength reports whether a 400 body says the request is too long.
func isContextLength(code int, body string) bool {
	return code == http.StatusBadRequest && contextLengthRE.MatchString(body)
}

// retryAfter reads the wait an endpoint asked for. The non-standard
// retry-after-ms (sent by OpenAI) is preferred because it is more precise.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	return parseRetryAfter(h.Get("Retry-After"), now)
}

// parseRetryAfter parses a Retry-After value: delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
