package main

import "runtime/debug"

// hostMemoryLimit is the Go runtime's soft memory limit in the processes
// that hold the store and serve calls (serve, mcp), unless the operator
// set GOMEMLIMIT.
//
// Such a process holds every installed plugin's wasm (up to 64 MiB each)
// and, while it installs one, a few short-lived copies of it (the request
// body, the bundle's parts, the store's write). With the default GC pacing
// the heap may grow to twice what is live before a collection, and the
// runtime returns freed memory to the system slowly: one 64 MiB install
// took `serve` from 30 to 450 MiB resident, four of them to 960 MiB. Under
// a soft limit the collector runs earlier as the heap nears it and gives
// memory back, so what stays resident follows what is live (four such
// plugins: 675 MiB, of which 280 MiB are the store's mapped value log).
// Wasm bytes hold no pointers, so a collection over a heap of modules
// costs little. A soft limit never fails an allocation: past it the
// runtime only collects more often (at most half the CPU).
const hostMemoryLimit = 384 << 20

// limitHostMemory sets hostMemoryLimit unless GOMEMLIMIT is in the
// environment (lookup is os.LookupEnv), whose value the runtime already
// applied.
func limitHostMemory(lookup func(string) (string, bool)) {
	if _, set := lookup("GOMEMLIMIT"); set {
		return
	}
	debug.SetMemoryLimit(hostMemoryLimit)
}
