// Package sandbox runs verified wasm executors under limits, in this
// process, with extism/wazero. InProcess implements engine.Engine.
//
// Every call gets a fresh instance (no state carries over from one call to
// the next) unless the signed manifest opts in to reuse, runs with the
// memory page cap, deadline and output cap of the signed manifest, and ends
// with either the output or a *toolerr.Error with a Code.
//
// Engines only ever see wasm that the host has verified and pre-validated;
// they are still written to survive anything the module does at run time.
// What they cannot survive (loop-free code past a deadline, a decoder that
// exhausts the process) is why the host runs this engine inside supervised
// worker processes (package worker).
package sandbox
