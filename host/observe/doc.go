// Package observe holds the call observers a serving host registers
// (host.Options.Observers): Prometheus metrics and the call log. Every
// call of every entry point reaches them, because they watch the host's
// pipeline rather than one front end.
//
// What they reveal: tool, plugin, entry point, outcome and durations.
// Argument values reach the log only when the operator asked for it
// (CallLog.Arguments), since they are the user's data; error messages are
// never logged, since the schema validator quotes argument values in them.
package observe
