// Package plugin defines the plugin format: the manifest (plugin.json), its
// strict parsing and validation rules, and the bundle file that carries a
// manifest, its wasm executor and curator signatures.
//
// Everything here parses untrusted bytes. Parsing is strict and single: the
// bytes a curator signed are the bytes the host parses, duplicate, unknown and
// case-variant keys are refused, and sizes are capped before anything is read
// into memory. Nothing in this package decides trust; see package curator.
package plugin
