package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/audit"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/store"
)

// auditGroupDelay bounds how long a call's answer may wait for other
// calls in flight to append their records, so that one fsync of the audit
// log covers them all (audit.Log.Group).
const auditGroupDelay = 500 * time.Microsecond

// governance is what the process holding the store adds around its host:
// the audit log (a call observer, and the record of every change) and the
// Governor (approval policy, hooks, approvals).
type governance struct {
	log *audit.Log
	rec *audit.Recorder
	gov *govern.Governor
	h   *host.Host // set once the host exists (hooks are read per call)
}

// openGovernance opens the audit log and the Governor over st. The host is
// attached with attach once it exists; until then no hooks run.
func (g *globalOptions) openGovernance(st *store.Store) (*governance, error) {
	l, err := audit.Open(filepath.Join(g.home, audit.FileName))
	if err != nil {
		return nil, fmt.Errorf("%w; toolhost keeps its audit log in the home directory and does not run without it", err)
	}
	gv := &governance{log: l, rec: &audit.Recorder{Log: l, LogArguments: g.logArguments, Logger: g.logger}}
	timeout := g.approvalTimeout
	if timeout == 0 {
		// Only serve has --approval-timeout (validated there); mcp, when it
		// holds the store, waits the default.
		timeout = govern.DefaultApprovalTimeout
	}
	gv.gov, err = govern.New(govern.Options{
		Store: st, ApprovalTimeout: timeout, Audit: gv.rec, Logger: g.logger, NoApprover: !g.servesControl,
		Hooks: func() []govern.HookTarget {
			if gv.h == nil {
				return nil
			}
			return gv.h.PolicyHooks()
		},
	})
	if err != nil {
		l.Close()
		return nil, err
	}
	return gv, nil
}

// governed wraps a host's management API so changes are audited and
// governance is served.
func (gv *governance) governed(h *host.Host, actor string) *control.Governed {
	return &control.Governed{API: control.Local{H: h}, H: h, Gov: gv.gov, Audit: gv.rec, Actor: actor}
}

func (gv *governance) close() {
	if err := gv.log.Close(); err != nil {
		_ = err // the log is fsync'd after every record; nothing is lost
	}
}
