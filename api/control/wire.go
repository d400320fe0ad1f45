package control

import (
	"errors"
	"slices"
	"time"

	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/signing"
	"github.com/toolhost/toolhost/store"
)

// wireError carries an error's kind across the socket.
type wireError struct {
	// Kinds name every sentinel the error matches (errors.Is), so that
	// e.g. "not_allowed" and "untrusted" both survive the trip.
	Kinds   []string `json:"kinds"`
	Code    string   `json:"code,omitempty"` // for kind "call"
	Message string   `json:"message"`
}

// kinds maps wire kinds to the sentinels errors.Is looks for.
var kinds = []struct {
	name string
	err  error
}{
	{"not_allowed", host.ErrNotAllowed},
	{"downgrade", host.ErrDowngrade},
	{"widening", host.ErrWidening},
	{"grant_unavailable", host.ErrGrantUnavailable},
	{"tool_conflict", host.ErrToolConflict},
	{"not_installed", host.ErrNotInstalled},
	{"invalid_module", host.ErrInvalidModule},
	{"invalid_bundle", plugin.ErrInvalidBundle},
	{"invalid_manifest", plugin.ErrInvalidManifest},
	{"not_found", store.ErrNotFound},
	{"malformed_key", signing.ErrMalformedKey},
	{"unsigned", curator.ErrUnsigned},
	{"untrusted", curator.ErrUntrusted},
	{"revoked", curator.ErrRevoked},
	{"expired", curator.ErrExpired},
	{"below_threshold", curator.ErrBelowThreshold},
	{"bad_signature", curator.ErrBadSignature},
	{"no_such_approval", govern.ErrNoSuchApproval},
	{"invalid_setting", host.ErrInvalidSetting},
	{"secrets_key", store.ErrSecretsKey},
	{"trust_conflict", store.ErrTrustConflict},
}

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	var se *toolerr.Error
	if errors.As(err, &se) {
		return &wireError{Kinds: []string{"call"}, Code: string(se.Code), Message: se.Message}
	}
	w := &wireError{Message: err.Error()}
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			w.Kinds = append(w.Kinds, k.name)
		}
	}
	return w
}

// remoteError is an error from the host process, with its kind restored.
type remoteError struct {
	msg  string
	kind []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.kind }

func fromWire(w *wireError) error {
	if w == nil {
		return nil
	}
	if slices.Contains(w.Kinds, "call") {
		return &toolerr.Error{Code: toolerr.Code(w.Code), Message: w.Message}
	}
	re := &remoteError{msg: w.Message}
	for _, k := range kinds {
		if slices.Contains(w.Kinds, k.name) {
			re.kind = append(re.kind, k.err)
		}
	}
	return re
}

type decisionJSON struct {
	Signatures []curator.SignatureStatus `json:"signatures"`
	Signers    []string                  `json:"signers"`
	Threshold  int                       `json:"threshold"`
	Err        *wireError                `json:"error,omitempty"`
}

func toDecisionJSON(d curator.Decision) decisionJSON {
	return decisionJSON{Signatures: d.Signatures, Signers: d.Signers, Threshold: d.Threshold, Err: toWire(d.Err)}
}

func (d decisionJSON) decision() curator.Decision {
	return curator.Decision{Signatures: d.Signatures, Signers: d.Signers, Threshold: d.Threshold, Err: fromWire(d.Err)}
}

type installReportJSON struct {
	Name      string           `json:"name"`
	Version   string           `json:"version"`
	Digest    signing.Digest   `json:"digest"`
	Decision  decisionJSON     `json:"decision"`
	Previous  *host.PluginInfo `json:"previous,omitempty"`
	Unchanged bool             `json:"unchanged"`
	// SignaturesUpdated: see host.InstallReport.
	SignaturesUpdated bool            `json:"signatures_updated,omitempty"`
	Changes           []plugin.Change `json:"changes,omitempty"`
}

type trustKeyJSON struct {
	KeyID     signing.KeyID     `json:"key_id"`
	Name      string            `json:"name"`
	PublicKey signing.PublicKey `json:"public_key"`
	AddedAt   time.Time         `json:"added_at"`
}

type trustSetJSON struct {
	Keys      []trustKeyJSON              `json:"keys"`
	Revoked   map[signing.KeyID]time.Time `json:"revoked"`
	Threshold int                         `json:"threshold"`
}

func toTrustSetJSON(ts curator.TrustSet) trustSetJSON {
	out := trustSetJSON{Revoked: ts.Revoked, Threshold: ts.Threshold}
	for id, k := range ts.Keys {
		out.Keys = append(out.Keys, trustKeyJSON{KeyID: id, Name: k.Name, PublicKey: k.Key, AddedAt: k.AddedAt})
	}
	return out
}

func (t trustSetJSON) trustSet() curator.TrustSet {
	ts := curator.TrustSet{Keys: map[signing.KeyID]curator.TrustedKey{}, Revoked: t.Revoked, Threshold: t.Threshold}
	if ts.Revoked == nil {
		ts.Revoked = map[signing.KeyID]time.Time{}
	}
	for _, k := range t.Keys {
		ts.Keys[k.KeyID] = curator.TrustedKey{Name: k.Name, Key: k.PublicKey, AddedAt: k.AddedAt}
	}
	return ts
}
