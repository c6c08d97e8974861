package tasksapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/agenttask/agenttask/internal/codec"
	"github.com/agenttask/agenttask/internal/definitions"
)

// Error codes (docs/tasks-api.md#errors) and the HTTP status each answers
// with.
const (
	CodeValidationFailed = "validation_failed"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeTaskNotFound     = definitions.CodeTaskNotFound
	CodePromptNotFound   = definitions.CodePromptNotFound
	CodeRunNotFound      = "run_not_found"
	CodeTaskExists       = definitions.CodeTaskExists
	CodeTaskLimit        = definitions.CodeTaskLimit
	CodeTaskDisabled     = "task_disabled"
	CodeRunClosed        = "run_closed"
	CodeRunTimeout       = "run_timeout"
	CodeModelError       = "model_error"
	// CodeBudgetExceeded: the run's budget did not cover its next model
	// call (onExhausted "fail", or no raise within the run's idle time).
	CodeBudgetExceeded = "budget_exceeded"
	// CodeApprovalNotFound: the run has no approval of that ID;
	// CodeApprovalDecided: it was decided before, the first decision stands.
	CodeApprovalNotFound = "approval_not_found"
	CodeApprovalDecided  = "approval_decided"
	// CodeStreamInterrupted ends a stream whose model call failed after
	// its text began; the call is tried again (docs/streaming.md).
	CodeStreamInterrupted = "stream_interrupted"
	// CodeStreamingUnavailable refuses a stream ("stream": true, /events)
	// while the API's broker is unreachable; runs without stream go on.
	CodeStreamingUnavailable = "streaming_unavailable"
	// CodeRateLimited refuses a call over its key's rate limit
	// (AGENT_API_RATE_LIMIT), with Retry-After in seconds.
	CodeRateLimited = "rate_limited"
	// CodeTaskBusy refuses a follow-up the task cannot take now (its
	// queue full, or as many sends and asks in flight as it runs at once:
	// QUEUE_FULL, QUEUE_BUSY, ASKS_FULL); the detail says when to retry.
	CodeTaskBusy    = "task_busy"
	CodeNotFound    = "not_found"   // no such route
	CodeInternal    = "internal"    // a fault of the service
	CodeUnavailable = "unavailable" // Temporal cannot be reached
)

var statusOf = map[string]int{
	CodeValidationFailed:     http.StatusBadRequest,
	CodeUnauthorized:         http.StatusUnauthorized,
	CodeForbidden:            http.StatusForbidden,
	CodeTaskNotFound:         http.StatusNotFound,
	CodePromptNotFound:       http.StatusNotFound,
	CodeRunNotFound:          http.StatusNotFound,
	CodeNotFound:             http.StatusNotFound,
	CodeTaskExists:           http.StatusConflict,
	CodeTaskLimit:            http.StatusConflict,
	CodeTaskDisabled:         http.StatusConflict,
	CodeRunClosed:            http.StatusConflict,
	CodeRunTimeout:           http.StatusGatewayTimeout,
	CodeApprovalNotFound:     http.StatusNotFound,
	CodeApprovalDecided:      http.StatusConflict,
	CodeModelError:           http.StatusBadGateway,
	CodeBudgetExceeded:       http.StatusPaymentRequired,
	CodeStreamInterrupted:    http.StatusBadGateway,
	CodeStreamingUnavailable: http.StatusServiceUnavailable,
	CodeRateLimited:          http.StatusTooManyRequests,
	CodeTaskBusy:             http.StatusTooManyRequests,
	CodeInternal:             http.StatusInternalServerError,
	CodeUnavailable:          http.StatusServiceUnavailable,
}

// Problem is an error answer, an RFC 9457 problem document with the seed's
// code and, for a refused field, its dotted name (the first fault only).
type Problem struct {
	Type   string `json:"type" doc:"A URI naming the kind of problem"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Code   string `json:"code" enum:"validation_failed,unauthorized,forbidden,task_not_found,prompt_not_found,run_not_found,task_exists,task_limit,task_disabled,run_closed,run_timeout,model_error,budget_exceeded,approval_not_found,approval_decided,stream_interrupted,streaming_unavailable,rate_limited,task_busy,not_found,internal,unavailable"`
	Detail string `json:"detail"`
	Field  string `json:"field,omitempty" doc:"The refused field, dotted as the API names fields (history.maxBytes, history[2].content)"`
}

func (p *Problem) Error() string             { return p.Code + ": " + p.Detail }
func (p *Problem) GetStatus() int            { return p.Status }
func (p *Problem) ContentType(string) string { return "application/problem+json" }

// problem builds a Problem; status follows the code unless given (413 and
// 415 keep validation_failed). A fault that comes of a codec key this
// process does not hold is missingKey's 503 instead.
func problem(code, detail, field string, status ...int) *Problem {
	switch code {
	case CodeInternal:
		if p := missingKey(detail); p != nil {
			return p
		}
	case CodeRunNotFound:
		// A run's memo (which says this API started it) under a key this
		// process does not hold reads as absent.
		if ms := codec.MissingKeys(); len(ms) > 0 && strings.HasSuffix(detail, "was started by this API") {
			detail += fmt.Sprintf(", or its record is encrypted with a key this process cannot read: it has met data under key %q, "+
				"which its %s does not list", ms[0].KeyID, codec.EnvKeys)
		}
	}
	s := statusOf[code]
	if len(status) > 0 {
		s = status[0]
	}
	return &Problem{Type: "https://agenttask.dev/problems/" + strings.ReplaceAll(code, "_", "-"), Title: http.StatusText(s),
		Status: s, Code: code, Detail: detail, Field: field}
}

// TitleMissingKey is the title of the problem a missing codec key makes.
const TitleMissingKey = "Encryption key missing"

// missingKey turns a fault into 503 unavailable naming the codec key and
// AGENT_CODEC_KEYS when this process has met data under a key it does not
// hold (codec.MissingKeys) and the fault is that, or is Temporal's refusal
// of a workflow whose workflow tasks fail ("Workflow Task in failed
// state"), which a missing key makes of every workflow written under it
// (the API's stored prompts and tasks, a run) as its worker replays it. nil
// otherwise: the fault stays a 500.
func missingKey(detail string) *Problem {
	keys := codec.MissingKeys()
	if len(keys) == 0 {
		return nil
	}
	m := keys[0] // the most recently met
	found := false
	for _, k := range keys {
		if strings.Contains(detail, fmt.Sprintf("key %q", k.KeyID)) {
			m, found = k, true
			break
		}
	}
	if !found && !strings.Contains(detail, "Workflow Task in failed state") {
		return nil
	}
	s := http.StatusServiceUnavailable
	return &Problem{Type: "https://agenttask.dev/problems/" + strings.ReplaceAll(CodeUnavailable, "_", "-"), Title: TitleMissingKey,
		Status: s, Code: CodeUnavailable,
		Detail: fmt.Sprintf("this call needs data encrypted with key %q, which this process cannot read: %s; what was written under it "+
			"goes on where it was once every process (this API and the workers) lists that key in %s (nothing is lost) [%s]",
			m.KeyID, strings.TrimPrefix(m.Err.Error(), "codec: "), codec.EnvKeys, detail)}
}

func invalid(field, format string) *Problem { return problem(CodeValidationFailed, format, field) }

// hookErrors makes huma's own refusals (body that does not parse, wrong
// types, oversized, wrong Content-Type, unknown route) problem documents
// like ours. huma.NewError is package-wide: this API is the only huma API
// in the process.
func hookErrors() {
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		field := ""
		for _, e := range errs {
			var d huma.ErrorDetailer
			if errors.As(e, &d) {
				field = fieldOf(d.ErrorDetail().Location)
				if m := d.ErrorDetail().Message; m != "" {
					msg = m
				}
				break
			}
			if e != nil {
				msg = e.Error()
			}
		}
		switch {
		case status == http.StatusUnprocessableEntity, status == http.StatusBadRequest:
			return problem(CodeValidationFailed, msg, field)
		case status == http.StatusRequestEntityTooLarge, status == http.StatusUnsupportedMediaType:
			return problem(CodeValidationFailed, msg, field, status)
		case status == http.StatusNotFound:
			return problem(CodeNotFound, msg, "")
		case status >= 500:
			return problem(CodeInternal, msg, "", status)
		}
		p := problem(CodeValidationFailed, msg, field, status)
		return p
	}
}

// fieldOf turns huma's location (body.history[2].content, query.limit,
// path.name) into the field as the API names it.
func fieldOf(loc string) string {
	for _, p := range []string{"body.", "query.", "path.", "header."} {
		if strings.HasPrefix(loc, p) {
			return strings.TrimPrefix(loc, p)
		}
	}
	if loc == "body" {
		return ""
	}
	return loc
}

// fromStore maps a store refusal to its problem; other errors are faults.
func fromStore(err error) error {
	var se *definitions.Error
	if errors.As(err, &se) {
		if _, ok := statusOf[se.Code]; ok {
			return problem(se.Code, se.Message, "")
		}
		return problem(CodeValidationFailed, se.Message, "")
	}
	return problem(CodeInternal, "the store failed: "+err.Error(), "")
}
