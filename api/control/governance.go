package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/audit"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/internal/strictjson"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
	"github.com/toolhost/toolhost/store"
)

// Governance is the operator's side of governance: the approval policy and
// the calls waiting for a person. The process holding the store serves it
// (Governed); Client reaches it over the socket.
type Governance interface {
	Policy(ctx context.Context) (PolicyView, error)
	SetPolicy(ctx context.Context, pattern, action string) error
	UnsetPolicy(ctx context.Context, pattern string) error
	Approvals(ctx context.Context) ([]govern.Pending, error)
	Decide(ctx context.Context, id string, approve bool, reason string) error
}

// PolicyView is the operator's rules and the policy that results for every
// installed tool.
type PolicyView struct {
	Rules []store.PolicyRule `json:"rules"`
	Tools []govern.Effective `json:"tools"`
}

// Governed is the management API of the process that holds the store, with
// governance: every change (install, remove, trust, settings) is appended
// to the audit log before it is reported, with the store's journal number
// of the change (audit.Recorder.Journaled), and the Governor answers
// policy and approval requests. Handler serves its Governance routes too.
type Governed struct {
	API
	H     *host.Host
	Gov   *govern.Governor
	Audit *audit.Recorder // nil records nothing
	// Actor names who made changes through this value ("cli", "control").
	Actor string
}

var (
	_ API        = (*Governed)(nil)
	_ Governance = (*Governed)(nil)
	_ Governance = (*Client)(nil)
)

// journaled makes a change and records it in the audit log
// (audit.Recorder.Journaled): change makes it and returns the record's
// action, subject and detail with its error. The record is durable before
// the change is reported; a change made but not recorded is an error.
func (g *Governed) journaled(change func() (action, subject, detail string, err error)) error {
	if g.Audit == nil {
		_, _, _, err := change()
		return err
	}
	return g.Audit.Journaled(g.Actor, change)
}

// change is a change of a fixed action, subject and detail for journaled.
func change(action, subject, detail string, do func() error) func() (string, string, string, error) {
	return func() (string, string, string, error) { return action, subject, detail, do() }
}

func (g *Governed) Install(ctx context.Context, b *plugin.Bundle, opts host.InstallOptions) (host.InstallReport, error) {
	var rep host.InstallReport
	err := g.journaled(func() (string, string, string, error) {
		var err error
		rep, err = g.API.Install(ctx, b, opts)
		if rep.Unchanged {
			return "", "", "", err // nothing to record
		}
		detail := fmt.Sprintf("version %s, digest %s, signed by %v", rep.Version, rep.Digest, rep.Decision.Signers)
		switch {
		case rep.SignaturesUpdated:
			// The same content signed again: recorded as the install it is,
			// with the signers it had before.
			detail += fmt.Sprintf(", signatures updated (before: signed by %v)", rep.Previous.Signers)
		case rep.Previous != nil:
			detail += fmt.Sprintf(", replacing version %s (%s)", rep.Previous.Version, rep.Previous.Digest)
		}
		return "install", rep.Name, detail, err
	})
	return rep, err
}

func (g *Governed) Remove(ctx context.Context, name string) error {
	return g.journaled(change("remove", name, "", func() error { return g.API.Remove(ctx, name) }))
}

func (g *Governed) AddTrustedKey(ctx context.Context, name string, key signing.PublicKey) error {
	return g.journaled(change("trust_add", key.ID().String(), "curator "+name, func() error { return g.API.AddTrustedKey(ctx, name, key) }))
}

func (g *Governed) RemoveTrustedKey(ctx context.Context, id signing.KeyID) error {
	return g.journaled(change("trust_remove", id.String(), "", func() error { return g.API.RemoveTrustedKey(ctx, id) }))
}

func (g *Governed) Revoke(ctx context.Context, id signing.KeyID) error {
	return g.journaled(change("trust_revoke", id.String(), "", func() error { return g.API.Revoke(ctx, id) }))
}

func (g *Governed) Unrevoke(ctx context.Context, id signing.KeyID) error {
	return g.journaled(change("trust_unrevoke", id.String(), "", func() error { return g.API.Unrevoke(ctx, id) }))
}

func (g *Governed) SetThreshold(ctx context.Context, n int) error {
	return g.journaled(change("trust_threshold", fmt.Sprint(n), "", func() error { return g.API.SetThreshold(ctx, n) }))
}

// Policy lists the rules and the effective policy of every installed tool.
func (g *Governed) Policy(ctx context.Context) (PolicyView, error) {
	v := PolicyView{Rules: g.Gov.Rules(), Tools: []govern.Effective{}}
	for _, p := range g.H.Plugins() {
		m, err := plugin.ParseManifest(p.Manifest)
		if err != nil {
			continue
		}
		for i := range m.Tools {
			e := g.Gov.Effective(&m.Tools[i])
			e.Plugin = p.Name
			v.Tools = append(v.Tools, e)
		}
	}
	sort.Slice(v.Tools, func(i, j int) bool { return v.Tools[i].Tool < v.Tools[j].Tool })
	return v, nil
}

func (g *Governed) SetPolicy(_ context.Context, pattern, action string) error {
	return g.Gov.SetPolicy(pattern, action, g.Actor)
}

func (g *Governed) UnsetPolicy(_ context.Context, pattern string) error {
	return g.Gov.UnsetPolicy(pattern, g.Actor)
}

func (g *Governed) Approvals(context.Context) ([]govern.Pending, error) {
	return g.Gov.Approvals().List(), nil
}

func (g *Governed) Decide(_ context.Context, id string, approve bool, reason string) error {
	return g.Gov.Approvals().Decide(id, approve, reason, g.Actor)
}

// DecisionRequest is the body of POST /v1/approvals/{id}.
type DecisionRequest struct {
	Decision string `json:"decision"` // "approve" or "deny"
	Reason   string `json:"reason,omitempty"`
}

var decisionShape = strictjson.Object{"decision": strictjson.Any{}, "reason": strictjson.Any{}}

// ParseDecision checks a decision request.
func ParseDecision(body io.Reader) (approve bool, reason string, err error) {
	data, err := io.ReadAll(io.LimitReader(body, maxDecisionBytes+1))
	if err != nil {
		return false, "", fmt.Errorf("%w: %w", ErrUnreadBody, err)
	}
	if len(data) > maxDecisionBytes {
		return false, "", fmt.Errorf("%w: the decision is larger than %d KiB; give a shorter reason", ErrDecisionTooLarge, maxDecisionBytes>>10)
	}
	// Strictly: a decision read one way by a proxy or a log and another
	// here ({"decision":"deny","decision":"approve"}, "DECISION", a second
	// document after the first) must be refused, not guessed.
	var d DecisionRequest
	if err := strictjson.Decode(data, decisionShape, &d); err != nil {
		return false, "", fmt.Errorf(`%w: the body must be {"decision":"approve"|"deny","reason":"…"}: %s`, errBadRequest, strictjson.Detail(err))
	}
	switch d.Decision {
	case "approve":
		return true, d.Reason, nil
	case "deny":
		return false, d.Reason, nil
	}
	return false, "", fmt.Errorf(`%w: decision %q: use "approve" or "deny"`, errBadRequest, d.Decision)
}

var errBadRequest = fmt.Errorf("bad request")

var policyShape = strictjson.Object{"action": strictjson.Any{}}

// parsePolicyBody reads the body of PUT /v1/policy/{pattern} as strictly
// as a decision, for the same reason: {"action":"deny","action":"allow"}
// must not set a rule other than the one a reader of the request sees.
func parsePolicyBody(body io.Reader) (string, error) {
	var p struct {
		Action string `json:"action"`
	}
	err := decodeStrictBody(body, 4<<10, policyShape, &p, `the body must be {"action":"allow"|"ask"|"deny"}`)
	return p.Action, err
}

// decodeStrictBody reads a body of at most max bytes into v by shape
// (strictjson: no repeated, unknown or case-variant keys, one document);
// what it refuses is errBadRequest, saying want and what was wrong.
func decodeStrictBody(body io.Reader, max int, shape strictjson.Object, v any, want string) error {
	data, err := io.ReadAll(io.LimitReader(body, int64(max)+1))
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errBadRequest, want, err)
	}
	if len(data) > max {
		return fmt.Errorf("%w: %s, of at most %d KiB", errBadRequest, want, max>>10)
	}
	if err := strictjson.Decode(data, shape, v); err != nil {
		return fmt.Errorf("%w: %s: %s", errBadRequest, want, strictjson.Detail(err))
	}
	return nil
}

// maxDecisionBytes bounds a decision's body (its reason, mostly).
const maxDecisionBytes = 64 << 10

// ErrUnreadBody is wrapped by ParseDecision's error, with the reader's,
// when the body could not be read.
var ErrUnreadBody = errors.New("cannot read the decision")

// ErrDecisionTooLarge is wrapped by ParseDecision's error for a body over
// its bound.
var ErrDecisionTooLarge = errors.New("payload too large")

// handleGovernance adds the governance routes to mux.
func handleGovernance(mux *http.ServeMux, g Governance, reply func(http.ResponseWriter, any, error)) {
	mux.HandleFunc("GET /v1/policy", func(w http.ResponseWriter, r *http.Request) {
		v, err := g.Policy(r.Context())
		reply(w, v, err)
	})
	mux.HandleFunc("PUT /v1/policy/{pattern}", func(w http.ResponseWriter, r *http.Request) {
		action, err := parsePolicyBody(r.Body)
		if err != nil {
			reply(w, nil, err)
			return
		}
		reply(w, nil, g.SetPolicy(r.Context(), r.PathValue("pattern"), action))
	})
	mux.HandleFunc("DELETE /v1/policy/{pattern}", func(w http.ResponseWriter, r *http.Request) {
		reply(w, nil, g.UnsetPolicy(r.Context(), r.PathValue("pattern")))
	})
	mux.HandleFunc("GET /v1/approvals", func(w http.ResponseWriter, r *http.Request) {
		ps, err := g.Approvals(r.Context())
		reply(w, ps, err)
	})
	mux.HandleFunc("POST /v1/approvals/{id}", func(w http.ResponseWriter, r *http.Request) {
		approve, reason, err := ParseDecision(r.Body)
		if err == nil {
			err = g.Decide(r.Context(), r.PathValue("id"), approve, reason)
		}
		reply(w, nil, err)
	})
}

// Policy asks the running host for its approval policy.
func (c *Client) Policy(ctx context.Context) (PolicyView, error) {
	var v PolicyView
	err := c.do(ctx, http.MethodGet, "/v1/policy", nil, &v)
	return v, err
}

func (c *Client) SetPolicy(ctx context.Context, pattern, action string) error {
	if pattern == "" {
		return store.ValidPolicyPattern(pattern)
	}
	body, _ := json.Marshal(map[string]string{"action": action})
	return c.do(ctx, http.MethodPut, "/v1/policy/"+segment(pattern), body, nil)
}

func (c *Client) UnsetPolicy(ctx context.Context, pattern string) error {
	if pattern == "" {
		return store.NoPolicyRuleError(pattern)
	}
	return c.do(ctx, http.MethodDelete, "/v1/policy/"+segment(pattern), nil, nil)
}

func (c *Client) Approvals(ctx context.Context) ([]govern.Pending, error) {
	var ps []govern.Pending
	err := c.do(ctx, http.MethodGet, "/v1/approvals", nil, &ps)
	return ps, err
}

func (c *Client) Decide(ctx context.Context, id string, approve bool, reason string) error {
	if id == "" {
		return govern.NoSuchApprovalError(id)
	}
	d := DecisionRequest{Decision: "deny", Reason: reason}
	if approve {
		d.Decision = "approve"
	}
	body, _ := json.Marshal(d)
	return c.do(ctx, http.MethodPost, "/v1/approvals/"+segment(id), body, nil)
}
