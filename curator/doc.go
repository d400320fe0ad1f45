// Package curator holds curator identities and the trust policy.
//
// A curator reviews a plugin and signs its digest with an ed25519 key. Key
// files keep the private key encrypted under a passphrase (scrypt +
// XChaCha20-Poly1305) unless the operator explicitly asks for none.
//
// The trust policy decides whether a set of signatures makes a plugin
// loadable: at least Threshold distinct trusted, unrevoked keys must have
// made a valid, unexpired signature over the exact digest. The same key
// signing twice counts once; a revoked key never counts, even if it is also
// listed as trusted. Evaluate is run at install and again at every load.
package curator
