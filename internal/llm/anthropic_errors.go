package llm

import (
	"context"
	"errors"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

// mapError maps an SDK error onto *Error with the policy of the
// OpenAI-compatible client: 401, 403, 408, 429 and 5xx (529 overloaded
// included) are retryable with the Retry-After the server sent; a 400 that
// says the prompt is too long is a context-length error; other 4xx are not
// retryable; failures without a response are transport errors.
func (c *anthropicClient) mapError(ctx, attemptCtx context.Context, model string, err error) *Error {
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		return c.errs.transportError(ctx, attemptCtx, model, err)
	}
	msg := apiErr.Message
	if msg == "" {
		msg = endpointMessage([]byte(apiErr.RawJSON()))
	}
	status := apiErr.StatusCode
	retryable := retryableStatus(status)
	if status >= 200 && status <= 299 {
		// An error event inside a stream that began well: its type says what failed.
		retryable = string(apiErr.Type()) != "invalid_request_error"
	}
	long := isContextLength(status, msg)
	e := c.errs.errorf(model, retryable || long, status, err, "HTTP %s: %s: %s", statusText(status), apiErr.Type(), truncate(msg, maxEndpointMessage))
	e.ContextLength = long
	if apiErr.Response != nil {
		e.RetryAfter = retryAfter(apiErr.Response.Header, time.Now())
	}
	return e
}
