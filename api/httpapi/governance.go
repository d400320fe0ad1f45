package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/host/audit"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/host/toolerr"
)

// Approvals is the set of calls waiting for a person (govern.Approvals).
type Approvals interface {
	List() []govern.Pending
	// Decide answers a pending call; via is the entry point the
	// decision came through (this API: "http").
	Decide(id string, approve bool, reason, via string) error
}

// governanceRoutes serves the pending approvals and the audit log, when
// the API was given them.
func (a *API) governanceRoutes(authed func(string, http.Handler)) {
	if a.opts.Approvals != nil {
		authed("GET /v1/approvals", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, map[string]any{"approvals": a.opts.Approvals.List()})
		}))
		authed("POST /v1/approvals/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			approve, reason, err := control.ParseDecision(r.Body)
			if err != nil {
				switch {
				case errors.Is(err, control.ErrDecisionTooLarge):
					writeError(w, toolerr.Errorf(CodePayloadTooLarge, "%v", err))
				case errors.Is(err, control.ErrUnreadBody):
					writeError(w, bodyReadError(err))
				default:
					writeError(w, toolerr.Errorf(CodeInvalidRequest, "%v", err))
				}
				return
			}
			if err := a.opts.Approvals.Decide(r.PathValue("id"), approve, reason, "http"); err != nil {
				code := toolerr.CodeInternal
				if errors.Is(err, govern.ErrNoSuchApproval) {
					code = CodeNotFound
				}
				writeError(w, toolerr.Errorf(code, "%v", err))
				return
			}
			decision := "approved"
			if !approve {
				decision = "denied"
			}
			writeJSON(w, http.StatusOK, map[string]any{"id": r.PathValue("id"), "decision": decision})
		}))
	}
	if a.opts.AuditFile != "" {
		authed("GET /v1/audit", http.HandlerFunc(a.listAudit))
		authed("/v1/audit", methodNotAllowed("GET, HEAD"))
	}
	if a.opts.Approvals != nil {
		authed("/v1/approvals", methodNotAllowed("GET, HEAD"))
		authed("/v1/approvals/{id}", methodNotAllowed("POST"))
	}
}

// listAudit answers GET /v1/audit?since=DURATION|RFC3339&tool=NAME with
// the matching records, oldest first (at most the newest 10000).
func (a *API) listAudit(w http.ResponseWriter, r *http.Request) {
	q, qerr := queryParams(r, "since", "tool")
	if qerr != nil {
		writeError(w, qerr)
		return
	}
	f := audit.Filter{Tool: q.Get("tool"), Limit: 10000}
	if s := q.Get("since"); s != "" {
		if d, err := time.ParseDuration(s); err == nil && d >= 0 {
			f.Since = time.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339, s); err == nil {
			f.Since = t
		} else {
			writeError(w, toolerr.Errorf(CodeInvalidRequest, "since=%q: give a duration (30m, 24h) or an RFC 3339 time", s))
			return
		}
	}
	recs, err := audit.RecentFile(a.opts.AuditFile, f)
	if err != nil {
		writeError(w, toolerr.Errorf(toolerr.CodeInternal, "the audit log does not read: %v", err))
		return
	}
	if recs == nil {
		recs = []audit.Record{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"records": recs})
}
