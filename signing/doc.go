// Package signing computes plugin digests and makes and checks curator
// signatures over them.
//
// Trust model: a curator's ed25519 signature says "I reviewed exactly these
// bytes". The digest covers the exact manifest bytes (tool names,
// descriptions, schemas, limits and permissions) and the sha256 of the wasm
// executor, so none of them can change without a new signature. A signature
// is made over a domain-separated message (DSSE-style pre-authentication
// encoding with a payload type), so a signature over any other kind of
// document never verifies as a plugin signature. Expiry, when set, is inside
// the signed message.
//
// This package answers only "did this key sign this digest"; which keys are
// trusted, revoked or required is the curator package's trust policy.
// Key IDs are lookup hints, never a security decision on their own.
package signing
