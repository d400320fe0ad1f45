package home

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

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

// auditLogBeforeStore runs before the store is opened, to tell a new home
// from one whose audit log was removed. The log is created (empty, synced
// with its directory entry) before the store ever is, so a store that
// existed before this open without a log beside it means the log was
// deleted or moved: kept then says why a log must be there, and
// openGovernance refuses a missing one (audit.OpenKept). RATIONALE.md, "An
// erased audit log stops the host; a new one begins by hand".
func auditLogBeforeStore(auditPath, storeDir string) (kept string, err error) {
	if StoreExisted(storeDir) {
		return fmt.Sprintf("the home's store %s already existed", storeDir), nil
	}
	return "", audit.Create(auditPath)
}

// StoreExisted reports whether toolhost has opened the store in dir
// before: the directory holds something. An empty one (made, then a
// failed first open) held nothing a log accounts for.
func StoreExisted(dir string) bool {
	d, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		// Not readable: the store's own open says what is wrong; this is
		// not a new home.
		return true
	}
	defer d.Close()
	names, err := d.Readdirnames(1)
	// EOF: empty. Another error (not a directory, say): not a new home.
	return !errors.Is(err, io.EOF) && !(err == nil && len(names) == 0)
}

// openGovernance opens the audit log, records in it the changes st made
// that it does not hold (audit.Reconcile), and opens the Governor over
// st. The host is attached (governance.h) once it exists; until then no
// hooks run. kept, when set, says why a log must already be there
// (audit.OpenKept): the store existed before this open.
func openGovernance(auditPath string, st *store.Store, kept string, opts *Options, log *slog.Logger) (*governance, error) {
	var l *audit.Log
	var err error
	if kept != "" {
		l, err = audit.OpenKept(auditPath, kept)
	} else {
		l, err = audit.Open(auditPath)
	}
	if errors.Is(err, audit.ErrLogMissing) {
		return nil, err // says what to do (audit.MissingError)
	}
	if err != nil {
		return nil, fmt.Errorf("%w; toolhost keeps its audit log in the home directory and does not run without it", err)
	}
	// Before anything is served: the changes a process killed between a
	// store change and its record left unrecorded are recorded now.
	if n, err := audit.Reconcile(l, st); err != nil {
		l.Close()
		return nil, fmt.Errorf("%w; toolhost records every change to the store in its audit log and does not run while it cannot", err)
	} else if n > 0 {
		log.Warn("audit: recorded changes the store made but the audit log did not hold (toolhost stopped between the two); see `toolhost audit list`", "records", n)
	}
	gv := &governance{log: l, rec: &audit.Recorder{Log: l, LogArguments: opts.LogArguments, Logger: log, Journal: st}}
	gv.gov, err = govern.New(govern.Options{
		Store: st, ApprovalTimeout: opts.ApprovalTimeout, Audit: gv.rec, Logger: log,
		NoApprover: !opts.ServeControl,
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
