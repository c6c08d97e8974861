package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Endpoint is one OpenAI-compatible server.
type Endpoint struct {
	// BaseURL is like "https://api.openai.com/v1"; requests go to BaseURL+"/chat/completions".
	BaseURL string
	// APIKey is sent as a bearer token when non-empty.
	APIKey string
}

const (
	// maxResponseBytes bounds what we buffer from an endpoint; a chat answer is
	// far smaller, so anything bigger is a misbehaving server.
	maxResponseBytes = 16 << 20
	// maxEndpointMessage bounds the endpoint text copied into an Error.
	maxEndpointMessage = 1000
)

// endpointClient sends chat completions to one endpoint, one attempt per
// call, through openai-go's chat-completions service.
type endpointClient struct {
	provider string
	endpoint Endpoint
	chat     openai.ChatCompletionService
	baseErr  error // the base URL does not parse
	timeout  time.Duration
}

func newEndpointClient(provider string, ep Endpoint, hc *http.Client, timeout time.Duration) *endpointClient {
	c := &endpointClient{provider: provider, endpoint: ep, timeout: timeout}
	if _, err := url.Parse(ep.BaseURL); err != nil {
		// Not the *url.Error text: it repeats the URL, which may carry credentials.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		c.baseErr = err
	}
	// The service, not openai.NewClient: that one reads OPENAI_ORG_ID,
	// OPENAI_PROJECT_ID and OPENAI_CUSTOM_HEADERS and would send them to
	// every provider. Retries are the caller's (Temporal's), so none here.
	c.chat = openai.NewChatCompletionService(
		option.WithBaseURL(ep.BaseURL+"/"),
		option.WithAPIKey(ep.APIKey),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	)
	return c
}

func (c *endpointClient) complete(ctx context.Context, model string, req Request) (Response, error) {
	if c.baseErr != nil {
		return Response{}, c.errorf(model, false, 0, c.baseErr, "invalid endpoint base URL: %v", c.baseErr)
	}
	stream := req.OnText != nil
	var attemptCtx context.Context
	var cancel context.CancelFunc
	x := &exchange{}
	if stream {
		// A healthy stream may last longer than c.timeout in total, so there
		// the timeout bounds each wait for data instead.
		attemptCtx, x.idle, cancel = startIdleTimer(ctx, c.timeout)
	} else {
		attemptCtx, cancel = context.WithTimeout(ctx, c.timeout)
	}
	defer cancel()

	opts := []option.RequestOption{option.WithMiddleware(x.middleware), option.WithResponseBodyInto(&x.raw), option.WithJSONSet("stream", stream)}
	if stream {
		opts = append(opts, option.WithHeader("Accept", "text/event-stream"))
	}
	_, err := c.chat.New(attemptCtx, buildParams(model, req), opts...)
	switch {
	case x.refused:
		// The status said no; whatever openai-go made of the body (it reads
		// {"error":{..}} only), ours is read in full.
		return Response{}, c.httpError(model, x.resp, x.errorBody)
	case err != nil && !x.sent:
		// e.g. a NaN temperature or a schema holding a func: retrying cannot help.
		return Response{}, c.errorf(model, false, 0, nil, "cannot encode request: %v", err)
	case err != nil:
		return Response{}, c.transportError(ctx, attemptCtx, model, err)
	case x.raw == nil:
		return Response{}, c.errorf(model, true, 0, nil, "request failed: no response")
	}
	defer x.raw.Body.Close()
	status := x.raw.StatusCode
	if stream && !isJSON(x.raw.Header) {
		return c.readStream(ctx, attemptCtx, model, status, x.raw.Body, req.OnText)
	}
	data, err := io.ReadAll(x.raw.Body)
	if errors.Is(err, errTooLarge) {
		return Response{}, c.errorf(model, false, status, nil, "response larger than %d bytes", maxResponseBytes)
	}
	if err != nil {
		return Response{}, c.transportError(ctx, attemptCtx, model, err)
	}
	out, err := c.parseResponse(model, status, data)
	if err == nil && stream && out.Text != "" {
		// The server ignored "stream" and sent one completion: its text is
		// then the only delta.
		req.OnText(out.Text)
	}
	return out, err
}

// httpError is the Error for a response whose status is not 2xx.
func (c *endpointClient) httpError(model string, resp *http.Response, body []byte) *Error {
	long := isContextLength(resp.StatusCode, string(body))
	e := c.errorf(model, long || retryableStatus(resp.StatusCode), resp.StatusCode, nil,
		"HTTP %s: %s", statusText(resp.StatusCode), endpointMessage(body))
	e.RetryAfter = retryAfter(resp.Header, time.Now())
	e.ContextLength = long
	return e
}

// exchange watches the one HTTP exchange of a call from inside openai-go
// (a middleware): whether the request went out, the error body of a failed
// status, and it bounds the body it hands on.
type exchange struct {
	idle      *idleTimer     // streamed: bounds each wait for data
	sent      bool           // the request reached the transport
	resp      *http.Response // as it came
	refused   bool           // the status is not 2xx
	errorBody []byte         // then the body, read whole
	raw       *http.Response // a 2xx response, its body unread (openai-go's WithResponseBodyInto)
}

func (x *exchange) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	x.sent = true
	resp, err := next(req)
	if err != nil {
		return resp, err
	}
	x.resp = resp
	var body io.Reader = resp.Body
	if x.idle != nil {
		body = x.idle.reader(resp.Body)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, err := io.ReadAll(io.LimitReader(body, maxResponseBytes))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		x.refused, x.errorBody = true, data
		resp.Body = io.NopCloser(strings.NewReader(string(data)))
		return resp, nil
	}
	resp.Body = readCloser{&limitReader{r: body, n: maxResponseBytes}, resp.Body}
	return resp, nil
}

// errTooLarge ends a read past maxResponseBytes.
var errTooLarge = fmt.Errorf("response larger than %d bytes", maxResponseBytes)

// limitReader fails with errTooLarge after n bytes, where io.LimitReader
// would end quietly and a cut answer could pass for a whole one.
type limitReader struct {
	r io.Reader
	n int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

type readCloser struct {
	io.Reader
	io.Closer
}

// transportError classifies a failure without a (complete) HTTP response.
// ctx is the caller's context, attemptCtx the one bounded by RequestTimeout.
func (c *endpointClient) transportError(ctx, attemptCtx context.Context, model string, err error) *Error {
	switch {
	case ctx.Err() != nil:
		// The caller gave up (activity cancelled or timed out). Not the
		// endpoint's fault, so not a permanent failure; errors.Is sees ctx.Err().
		return c.errorf(model, true, 0, ctx.Err(), "request abandoned: %v", context.Cause(ctx))
	case errors.Is(attemptCtx.Err(), context.DeadlineExceeded):
		return c.errorf(model, true, 0, err, "request timed out after %s", c.timeout)
	case errors.Is(context.Cause(attemptCtx), errIdleTimeout):
		// A streamed attempt: the transport error is just "canceled", so
		// the cause is the timeout itself (errors.Is sees DeadlineExceeded).
		return c.errorf(model, true, 0, errIdleTimeout, "request timed out: no data from the endpoint for %s", c.timeout)
	default:
		return c.errorf(model, true, 0, err, "request failed: %v", err)
	}
}

// errorf builds an *Error whose message names the provider and model, with
// the API key scrubbed in case an endpoint or transport echoed it.
func (c *endpointClient) errorf(model string, retryable bool, status int, cause error, format string, args ...any) *Error {
	msg := fmt.Sprintf("llm: %s (model %q): ", c.provider, model) + fmt.Sprintf(format, args...)
	if k := c.endpoint.APIKey; k != "" {
		msg = strings.ReplaceAll(msg, k, "[redacted]")
	}
	return &Error{Retryable: retryable, StatusCode: status, Message: msg, cause: cause}
}
