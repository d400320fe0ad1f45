// Package host is the toolhost runtime: it loads verified plugins from the
// store, lists their tools, validates every call's arguments and runs the
// call in a sandbox.
//
// Trust model. A plugin is code nobody here wrote. The host loads a plugin
// only if its exact bytes carry valid signatures from enough trusted,
// unrevoked curators (checked at install and again at every load, and again
// whenever the trust store changes); it refuses unsigned or untrusted
// plugins unless the operator passes an explicit dev flag.
//
// What a plugin can do: compute on the arguments JSON it is given and
// return output, within the memory pages, deadline and output size its
// signed manifest declares (the host may lower them, never raise them).
// What it cannot do: see other calls' state (every call gets a fresh
// instance), read files or reach the network unless its signed manifest
// grants that path or host, see the environment, or outlive its deadline:
// on timeout the call ends with a "timeout" error and the instance is
// discarded. It may also write log lines and report progress during a
// call; they reach only a caller that attached a sink (WithCallEvents),
// bounded per call in size and rate, and nothing else (not the host's log).
//
// Every call, whatever its entry point (HTTP, MCP, the control socket of
// `toolhost call`, the Go API), goes through one pipeline (Host.Call):
// admission (a bounded queue, fair across plugins; busy only when the
// queue is full) → argument parsing and validation under bounded cost →
// the Governor (hooks, approvals) → the sandbox → one CallRecord to every
// CallObserver (metrics, call log, audit). The tool's deadline runs from
// the call's arrival, so a call ends within its timeout_ms (plus the
// engine's grace) however long it queued; a call whose caller goes away
// ends as cancelled.
package host
