package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
)

// ErrNoServer means nothing answers on the control socket.
var ErrNoServer = errors.New("control: no toolhost process is serving this home")

// Client is the API of a host in another process.
type Client struct {
	hc *http.Client
}

var _ API = (*Client)(nil)

// Dial connects to the control socket at path and checks that it answers.
// The socket file must be owned by this user (or root) and not writable by
// group or others, and every connection's peer (SO_PEERCRED) must run as
// this user or root; otherwise Dial fails with ErrUntrustedSocket before
// anything is sent.
func Dial(ctx context.Context, path string) (*Client, error) {
	if err := checkSocketFile(path); err != nil {
		return nil, err
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNoServer, err)
	}
	if c, err = dialTrusted(c, path); err != nil {
		return nil, err
	}
	c.Close()
	cl := &Client{hc: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, "unix", path)
			if err != nil {
				return nil, err
			}
			return dialTrusted(c, path)
		},
		MaxIdleConns: 4,
	}}}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var pong string
	if err := cl.do(pctx, http.MethodGet, "/v1/ping", nil, &pong); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoServer, err)
	}
	return cl, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// entryHeader carries a call's entry point (host.EntryOf) to the host
// process, so that its pipeline counts and logs the call as what it is.
const entryHeader = "Toolhost-Entry"

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://toolhost"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set(entryHeader, string(host.EntryOf(ctx)))
	resp, err := c.hc.Do(req)
	if err != nil {
		return unanswered(ctx, method, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *wireError      `json:"error"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return notAnAnswer(method, path, resp.StatusCode, data)
	}
	if out != nil && len(env.Result) > 0 && string(env.Result) != "null" {
		if err := json.Unmarshal(env.Result, out); err != nil && env.Error == nil {
			return err
		}
	}
	return fromWire(env.Error)
}

// unanswered is the error of a request the host did not answer. Only a
// GET (a reading) is known to have changed nothing: another request may
// have been carried out before the process went away (a change made in
// the store, a tool run), and saying only "did not answer" invites a blind
// retry.
func unanswered(ctx context.Context, method string, err error) error {
	if method != http.MethodGet && ctx.Err() == nil {
		return fmt.Errorf("control: the running toolhost did not answer (%w); it may have stopped while handling the request, so whether it took effect is unknown: check with `toolhost plugin list` or `toolhost audit list --since 10m` before you retry, and start `toolhost serve` again if it is not running", err)
	}
	return fmt.Errorf("control: the running toolhost did not answer: %w", err)
}

// notAnAnswer describes a reply that is not the API's JSON: the router's
// own 404 or 405 page, or a proxy's. It says what came back rather than
// how it failed to parse.
func notAnAnswer(method, path string, status int, body []byte) error {
	what := http.StatusText(status)
	switch status {
	case http.StatusNotFound:
		what = "no such route"
	case http.StatusMethodNotAllowed:
		what = "the route does not take " + method
	}
	text := strings.TrimSpace(string(body))
	if len(text) > 120 {
		text = text[:120] + "…"
	}
	return fmt.Errorf("control: the running toolhost answered HTTP %d (%s) to %s %s: %q, not an API answer; "+
		"it may be another toolhost version than this command: restart toolhost serve with this one", status, what, method, path, text)
}

// segment escapes one path segment so that the server's router sees
// exactly it. url.PathEscape leaves "." and ".." as they are, and the
// router resolves those (".." climbs to another route); escaped, they
// reach the handler as names. An empty segment cannot be sent at all (the
// router joins the slashes around it, shifting the route): the methods
// below answer an empty name themselves, as the host would.
func segment(s string) string {
	if s == "." || s == ".." {
		return strings.Repeat("%2E", len(s))
	}
	return url.PathEscape(s)
}

func (c *Client) Install(ctx context.Context, b *plugin.Bundle, opts host.InstallOptions) (host.InstallReport, error) {
	q := url.Values{}
	if opts.AllowDowngrade {
		q.Set("allow_downgrade", "1")
	}
	if opts.AcceptWidening {
		q.Set("accept_widening", "1")
	}
	path := "/v1/install?" + q.Encode()
	var r installReportJSON
	err := c.do(ctx, http.MethodPost, path, b.Bytes(), &r)
	return host.InstallReport{Name: r.Name, Version: r.Version, Digest: r.Digest, Decision: r.Decision.decision(), Previous: r.Previous, Unchanged: r.Unchanged, SignaturesUpdated: r.SignaturesUpdated, Changes: r.Changes}, err
}

func (c *Client) Remove(ctx context.Context, name string) error {
	if name == "" {
		return host.NotInstalledError(name)
	}
	return c.do(ctx, http.MethodDelete, "/v1/plugins/"+segment(name), nil, nil)
}

func (c *Client) Plugins(ctx context.Context) ([]host.PluginInfo, error) {
	var ps []host.PluginInfo
	err := c.do(ctx, http.MethodGet, "/v1/plugins", nil, &ps)
	return ps, err
}

func (c *Client) Plugin(ctx context.Context, name string) (host.PluginInfo, error) {
	if name == "" {
		return host.PluginInfo{}, host.NotInstalledError(name)
	}
	var p host.PluginInfo
	err := c.do(ctx, http.MethodGet, "/v1/plugins/"+segment(name), nil, &p)
	return p, err
}

func (c *Client) Evaluate(ctx context.Context, b *plugin.Bundle) (curator.Decision, error) {
	var d decisionJSON
	err := c.do(ctx, http.MethodPost, "/v1/evaluate", b.Bytes(), &d)
	return d.decision(), err
}

func (c *Client) Tools(ctx context.Context) ([]host.ToolInfo, error) {
	var ts []host.ToolInfo
	err := c.do(ctx, http.MethodGet, "/v1/tools", nil, &ts)
	return ts, err
}

// Call runs a tool in the host process, through its pipeline, as the
// entry point ctx is labelled with (EntryCLI when it is not). Cancelling
// ctx closes the connection, which cancels the call in the host process.
// A sink in ctx (host.WithCallEvents) gets the plugin's events as they
// happen there; when ctx carries a govern.Elicitor, a call that needs
// approval asks it (see elicit.go).
func (c *Client) Call(ctx context.Context, tool string, args []byte) (json.RawMessage, error) {
	if tool == "" {
		return nil, host.NoSuchToolError(tool)
	}
	if _, ok := host.LookupEntry(ctx); !ok {
		ctx = host.WithEntry(ctx, host.EntryCLI)
	}
	var res json.RawMessage
	var err error
	path := "/v1/tools/" + segment(tool) + "/call"
	sink, ask := host.CallEventsOf(ctx), govern.ElicitorOf(ctx)
	if sink != nil || ask != nil {
		res, err = c.callStreamed(ctx, path, args, sink, ask)
	} else {
		err = c.do(ctx, http.MethodPost, path, args, &res)
	}
	if err != nil && toolerr.CodeOf(err) == "" && ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, toolerr.Errorf(toolerr.CodeCancelled, "the call was cancelled")
		}
		return nil, toolerr.Errorf(toolerr.CodeTimeout, "no answer from the running toolhost before the deadline")
	}
	return res, err
}

func (c *Client) TrustSet(ctx context.Context) (curator.TrustSet, error) {
	var t trustSetJSON
	err := c.do(ctx, http.MethodGet, "/v1/trust", nil, &t)
	return t.trustSet(), err
}

func (c *Client) AddTrustedKey(ctx context.Context, name string, key signing.PublicKey) error {
	body, _ := json.Marshal(trustKeyJSON{KeyID: key.ID(), Name: name, PublicKey: key})
	return c.do(ctx, http.MethodPost, "/v1/trust/keys", body, nil)
}

func (c *Client) RemoveTrustedKey(ctx context.Context, id signing.KeyID) error {
	return c.do(ctx, http.MethodDelete, "/v1/trust/keys/"+id.String(), nil, nil)
}

func (c *Client) Revoke(ctx context.Context, id signing.KeyID) error {
	return c.do(ctx, http.MethodPut, "/v1/trust/revoked/"+id.String(), nil, nil)
}

func (c *Client) Unrevoke(ctx context.Context, id signing.KeyID) error {
	return c.do(ctx, http.MethodDelete, "/v1/trust/revoked/"+id.String(), nil, nil)
}

func (c *Client) SetThreshold(ctx context.Context, n int) error {
	return c.do(ctx, http.MethodPut, "/v1/trust/threshold/"+strconv.Itoa(n), nil, nil)
}

// WaitChange blocks until the host's change generation differs from
// after, about 25 s pass, or ctx ends, and returns the generation it saw.
// Pass a negative after to learn the current generation at once.
func (c *Client) WaitChange(ctx context.Context, after int64) (uint64, error) {
	var gen uint64
	err := c.do(ctx, http.MethodGet, "/v1/changes?after="+strconv.FormatInt(after, 10), nil, &gen)
	return gen, err
}
