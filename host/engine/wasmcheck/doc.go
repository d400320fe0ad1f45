// Package wasmcheck is an allocation-bounded pre-validator for untrusted
// WebAssembly core modules. Run it on every module BEFORE the bytes reach
// wazero or extism.
//
// Why it exists: wazero's binary decoder sizes allocations from vector counts
// declared in the module (make([]T, n) with n read straight from a LEB128), so
// a ~15-byte module that declares 0xFFFFFFFF entries in a section, or a code
// body that declares 2^32-1 locals, ends the Go process with an unrecoverable
// "fatal error: out of memory". A funcref table with a huge minimum, or with
// no maximum plus table.grow, allocates GiBs outside the linear-memory page
// limit. Check refuses those shapes with a typed error instead.
//
// # What Check guarantees
//
//   - It never panics, whatever the input.
//   - It never allocates more than O(len(wasm)) bytes: every vector count is
//     compared with the bytes remaining in its section (each element needs at
//     least one byte) before anything sized by it exists, LEB128 reads are
//     bounded (at most 5 bytes for 32-bit values, 10 for 64-bit; overflowing
//     bits are rejected), and its running time is linear in len(wasm).
//   - When it returns a nil error, every vector count, string length, section
//     size, function-body size and local-declaration count in the module is
//     consistent with the bytes that carry it, the sections are known (ids
//     0..12) and in canonical order, the "name" custom section (which wazero
//     always decodes) is well formed, and the declared sizes respect the
//     Policy: so wazero's decoder allocates at most a constant factor of the
//     module size (plus what the Policy's locals limits allow: locals cost
//     memory but almost no bytes), and tables and memory are bounded by the
//     Policy.
//
// A table without a declared maximum is accepted only when no function uses
// table.grow (the only way a table grows in wazero): Go's wasip1 output has
// exactly such a table. On a policy refusal Check still returns the parsed
// Module, so hosts can show what the module asked for.
//
// # What Check does not do
//
// It is not a full validator. It does not type-check function bodies,
// constant expressions or most index references; wazero's own validation
// still runs at CompileModule and remains required. Function bodies are
// decoded opcode by opcode (every immediate, so block nesting stays in sync
// and table.grow is found) but not type-checked. It does not look inside
// custom sections other than "name"; in particular wazero (DWARF enabled by
// default) hands .debug_* sections to Go's debug/dwarf, which is not
// hardened against hostile input: run wazero with WithDebugInfoEnabled(false)
// or refuse modules whose Module.CustomSections contain ".debug_" names.
// It does not bound what a valid module does at run time (CPU time, stack
// depth, memory.grow up to the runtime page limit): configure those on the
// runtime (wazero WithMemoryLimitPages, WithCloseOnContextDone, a deadline)
// and keep an out-of-process backstop.
//
// Only the core WebAssembly binary format version 1 is accepted, with the
// encodings of the features wazero enables by default (WebAssembly 2.0:
// multi-value, sign-extension, non-trapping float-to-int, bulk memory,
// reference types, SIMD) plus tail calls and threads opcodes. Components,
// exception handling, GC / typed function references, memory64, shared
// memories and multiple memories are refused.
package wasmcheck
