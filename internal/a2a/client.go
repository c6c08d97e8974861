package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Client calls the remote agents a worker's operator lists, over A2A
// v1.0's JSON-RPC binding: each method is one short request (SendMessage
// with returnImmediately, GetTask, CancelTask), so a remote task of hours
// is followed by polls, never by one request or activity held open.
type Client struct {
	agents Agents
	http   *http.Client

	mu    sync.Mutex
	cards map[string]cachedEndpoint // endpoint by agent name, read from its card
}

type cachedEndpoint struct {
	url  string
	read time.Time
}

// cardTTL is how long an agent's endpoint, read from its card, is used
// before the card is read again.
const cardTTL = 10 * time.Minute

// maxResponseBytes bounds what one answer may hold: a task with its
// artifacts and history. Larger answers are refused, not truncated.
const maxResponseBytes = 4 << 20

// requestTimeout bounds one request; the workflow's timers do the waiting.
const requestTimeout = 30 * time.Second

// NewClient reaches agents; hc nil uses a client of its own.
func NewClient(agents Agents, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: requestTimeout}
	}
	// No redirect is followed: it could carry the operator's headers (and
	// a request's body) to a host the operator did not list. A 3xx is an
	// answer the operator fixes (the card's URL).
	c := *hc
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{agents: agents, http: &c, cards: map[string]cachedEndpoint{}}
}

// Has reports whether the operator lists agent name.
func (c *Client) Has(name string) bool {
	if c == nil {
		return false
	}
	_, ok := c.agents[name]
	return ok
}

// Names are the listed agents' names, sorted.
func (c *Client) Names() []string {
	if c == nil {
		return nil
	}
	return c.agents.Names()
}

// Error is a failed call. Retryable errors (the agent unreachable, an
// HTTP 5xx, 408, 429, 401 or 403, a JSON-RPC internal error) may pass
// if the call is tried again later; the others (a card that offers no
// A2A v1.0 JSON-RPC interface, a task the agent does not know, a request
// it refuses) will not.
type Error struct {
	Retryable bool
	Code      int // the JSON-RPC error code, when the agent answered one
	Message   string
}

func (e *Error) Error() string { return e.Message }

// Retryable reports whether err may pass when the call is tried again.
func Retryable(err error) bool {
	var e *Error
	return !errors.As(err, &e) || e.Retryable
}

// Send sends a message. The answer is the task it started or continued;
// an agent that answers with a message alone (no task) is read as a
// completed task holding that message.
func (c *Client) Send(ctx context.Context, agent string, p SendParams) (*Task, error) {
	var out struct {
		Task    *Task    `json:"task"`
		Message *Message `json:"message"`
	}
	if err := c.call(ctx, agent, "SendMessage", p, &out); err != nil {
		return nil, err
	}
	switch {
	case out.Task != nil:
		return out.Task, nil
	case out.Message != nil:
		return &Task{ID: out.Message.TaskID, ContextID: out.Message.ContextID, Status: Status{State: StateCompleted, Message: out.Message}}, nil
	}
	return nil, &Error{Message: fmt.Sprintf("the agent %q answered SendMessage with neither a task nor a message", agent)}
}

// Get reads a task.
func (c *Client) Get(ctx context.Context, agent, id string) (*Task, error) {
	var t Task
	if err := c.call(ctx, agent, "GetTask", TaskParams{ID: id}, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Cancel asks the agent to cancel a task; the answer is the task as it is
// then.
func (c *Client) Cancel(ctx context.Context, agent, id string) (*Task, error) {
	var t Task
	if err := c.call(ctx, agent, "CancelTask", TaskParams{ID: id}, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// call makes one JSON-RPC request of the agent's endpoint.
func (c *Client) call(ctx context.Context, agent, method string, params, out any) error {
	if c == nil {
		return &Error{Message: fmt.Sprintf("this worker lists no A2A agents (%s); ask its operator to list %q", EnvAgents, agent)}
	}
	ag, ok := c.agents[agent]
	if !ok {
		return &Error{Message: fmt.Sprintf("this worker lists no A2A agent %q (%s: %s)", agent, EnvAgents, strings.Join(c.Names(), ", "))}
	}
	endpoint, err := c.endpoint(ctx, ag)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int    `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", 1, method, params})
	var res struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := c.do(ctx, ag, http.MethodPost, endpoint, body, &res); err != nil {
		return err
	}
	if res.Error != nil {
		return &Error{Code: res.Error.Code, Retryable: res.Error.Code == CodeInternalError,
			Message: fmt.Sprintf("the agent %q refused %s: %s (code %d)", agent, method, clip(res.Error.Message, 1000), res.Error.Code)}
	}
	if err := json.Unmarshal(res.Result, out); err != nil {
		return &Error{Message: fmt.Sprintf("the agent %q answered %s with a result that is not A2A v1.0's: %v", agent, method, err)}
	}
	return nil
}

// endpoint is the agent's JSON-RPC URL, from its card: the interface of
// binding JSONRPC and protocol version 1.x. It must be on the card's own
// origin (scheme and host), so a card cannot send the worker's requests
// (and the operator's credentials) to a host the operator did not list.
func (c *Client) endpoint(ctx context.Context, ag Agent) (string, error) {
	c.mu.Lock()
	e, ok := c.cards[ag.Name]
	c.mu.Unlock()
	if ok && time.Since(e.read) < cardTTL {
		return e.url, nil
	}
	var card struct {
		Interfaces []struct {
			URL             string `json:"url"`
			ProtocolBinding string `json:"protocolBinding"`
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"supportedInterfaces"`
	}
	if err := c.do(ctx, ag, http.MethodGet, ag.CardURL, nil, &card); err != nil {
		return "", err
	}
	cardURL, _ := url.Parse(ag.CardURL)
	var offered []string
	for _, in := range card.Interfaces {
		offered = append(offered, in.ProtocolBinding+" "+in.ProtocolVersion)
		if !strings.EqualFold(in.ProtocolBinding, "JSONRPC") || !strings.HasPrefix(in.ProtocolVersion, "1.") {
			continue
		}
		u, err := cardURL.Parse(in.URL)
		if err != nil || u.Scheme != cardURL.Scheme || u.Host != cardURL.Host {
			return "", &Error{Message: fmt.Sprintf("the card of agent %q names its JSON-RPC endpoint %q, not on the card's origin %s://%s; the worker calls only the origin the operator listed", ag.Name, clip(in.URL, 200), cardURL.Scheme, cardURL.Host)}
		}
		c.mu.Lock()
		c.cards[ag.Name] = cachedEndpoint{url: u.String(), read: time.Now()}
		c.mu.Unlock()
		return u.String(), nil
	}
	return "", &Error{Message: fmt.Sprintf("the card of agent %q (%s) offers no JSON-RPC interface of A2A 1.x (it offers: %s); this worker speaks A2A 1.0 over JSON-RPC", ag.Name, ag.CardURL, strings.Join(offered, ", "))}
}

// do makes one HTTP request and decodes its JSON answer into out.
func (c *Client) do(ctx context.Context, ag Agent, method, target string, body []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return &Error{Message: fmt.Sprintf("agent %q: %v", ag.Name, err)}
	}
	for k, v := range ag.Header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("A2A-Version", Version)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &Error{Retryable: true, Message: fmt.Sprintf("the agent %q is unreachable: %v", ag.Name, err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return &Error{Retryable: true, Message: fmt.Sprintf("the agent %q: reading its answer: %v", ag.Name, err)}
	}
	if resp.StatusCode/100 != 2 {
		switch s := resp.StatusCode; {
		case s >= 500, s == http.StatusTooManyRequests, s == http.StatusRequestTimeout:
			return &Error{Retryable: true, Message: fmt.Sprintf("the agent %q answered HTTP %d", ag.Name, s)}
		case s == http.StatusUnauthorized, s == http.StatusForbidden:
			// The operator fixes the token: waited out like an outage.
			return &Error{Retryable: true, Message: fmt.Sprintf("the agent %q answered HTTP %d: check %sTOKEN", ag.Name, s, EnvPrefix(ag.Name))}
		}
		return &Error{Message: fmt.Sprintf("the agent %q answered HTTP %d to %s %s: %s", ag.Name, resp.StatusCode, method, target, clip(string(data), 300))}
	}
	if len(data) > maxResponseBytes {
		return &Error{Message: fmt.Sprintf("the agent %q answered more than %d bytes", ag.Name, maxResponseBytes)}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &Error{Message: fmt.Sprintf("the agent %q answered %s %s with what is not JSON: %v", ag.Name, method, target, err)}
	}
	return nil
}

// clip cuts s to at most n bytes, at a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
