// Package authoring is the plugin author's side of toolhost: a new plugin
// directory from an embedded template (Init), and a build that compiles
// the guest with its language's toolchain, checks the module as install
// would and packs the bundle (Build).
//
// What it guarantees: a directory made by Init builds and passes its own
// test with nothing but the language's toolchain; Build refuses to pack a
// module the sandbox would refuse at install (imports it does not provide,
// memory beyond the manifest's limit, a tool whose export is missing), so
// an author learns it before a curator does. What it does not do: sign,
// install or run anything — the bundle it writes is unsigned.
//
// It runs the author's toolchain (go, npx asc) in the author's directory:
// it is a developer tool, never used on the host's serving path.
package authoring
