// Package home opens a toolhost home (the directory `toolhost --home`
// names) in this process, with everything `toolhost serve` and `toolhost
// call` put around the runtime: it is the Go API's entry point to a home
// that no serve holds, and the CLI's own way to open one.
//
//	hm, err := home.Open(ctx, dir, home.Options{WorkerExecutable: toolhostPath})
//	defer hm.Close()
//	res, err := hm.Call(ctx, "get_current_time", []byte(`{"timezone":"UTC"}`))
//
// Trust model. Whoever can open the home can do what its operator can:
// Open refuses a home (or store) owned by another user or writable by
// group or others (ErrNotPrivate), as the CLI does. What it guarantees:
// every call through Home.Call (or Home.Host().Call) takes the pipeline
// of every other entry point — admission, argument validation, the
// home's approval policy (deny refuses; ask waits for an operator, see
// Options.ServeControl) and policy plugins' hooks, the sandbox, the
// after-hooks, the metrics, and an audit record in the home's hash-chained
// log, made durable before the answer, with entry "go" unless the context
// names another (host.WithEntry). Plugins are verified again at open and
// a damaged one is quarantined; the audit log is replayed and checked, and
// changes the store made but the log missed are recorded, before anything
// runs; an audit log that was erased stops Open (audit.ErrLogMissing).
// Tools run in supervised worker processes (Options.WorkerExecutable),
// never in the calling process: a plugin that crashes, hangs or exhausts
// memory kills its worker, not the program.
//
// What it does not do: share the home. The store has one holder; while a
// `toolhost serve` (or another Open) holds it, Open fails with
// store.ErrLocked, and the program reaches that holder with control.Dial
// instead, through the same pipeline. A home opened here serves the other
// toolhost commands only with Options.ServeControl; without it they wait
// for the lock (and give up after a few seconds). Changes made through
// Home.Manage are recorded; changes made on Home.Host() directly are
// recorded only at the next open, as recovered.
package home
