package curator

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/toolhost/toolhost/signing"
)

// Reasons a plugin is refused. Decision.Err wraps exactly one of them.
var (
	ErrUnsigned       = errors.New("plugin is not signed")
	ErrUntrusted      = errors.New("no signature is by a trusted curator")
	ErrRevoked        = errors.New("signed only by revoked curator keys")
	ErrExpired        = errors.New("every trusted signature has expired")
	ErrBelowThreshold = errors.New("not enough distinct trusted curators signed")
	ErrBadSignature   = errors.New("a signature by a trusted key does not verify (the plugin was modified after signing)")
)

// TrustedKey is a curator key the operator trusts.
type TrustedKey struct {
	Name    string
	Key     signing.PublicKey
	AddedAt time.Time
}

// TrustSet is the operator's trust state at one moment.
type TrustSet struct {
	Keys map[signing.KeyID]TrustedKey
	// Revoked keys never count, even if also in Keys.
	Revoked map[signing.KeyID]time.Time
	// Threshold is how many distinct trusted keys must have signed; values
	// below 1 are treated as 1.
	Threshold int
}

// SignatureState is the verdict on one signature.
type SignatureState string

const (
	StateTrusted   SignatureState = "trusted"
	StateUntrusted SignatureState = "untrusted"
	StateRevoked   SignatureState = "revoked"
	StateExpired   SignatureState = "expired"
	StateInvalid   SignatureState = "invalid"
	StateDuplicate SignatureState = "duplicate"
)

// SignatureStatus describes one signature of a plugin.
type SignatureStatus struct {
	KeyID   signing.KeyID  `json:"key_id"`
	Curator string         `json:"curator,omitempty"` // name from the trust store, "" when unknown
	State   SignatureState `json:"state"`
	Expires time.Time      `json:"expires,omitzero"`
}

// Decision is the policy's answer for one plugin digest.
type Decision struct {
	Signatures []SignatureStatus
	// Signers are the names (or key IDs) of the distinct trusted keys that
	// count toward the threshold, sorted.
	Signers   []string
	Threshold int
	// Err is nil when the plugin may load; otherwise it wraps one of the
	// Err* reasons above and says what to do.
	Err error
}

// Allowed reports whether the plugin may be installed or loaded.
func (d Decision) Allowed() bool { return d.Err == nil }

// Evaluate applies the trust policy to sigs over digest at time now.
func Evaluate(digest signing.Digest, sigs []signing.Signature, ts TrustSet, now time.Time) Decision {
	threshold := max(ts.Threshold, 1)
	d := Decision{Threshold: threshold}
	// counted maps each counting key to the index of its signature in
	// d.Signatures: of several valid signatures by one key, the one that
	// lasts longest counts, so that the decision's expiry is that one's
	// (a re-signature with a later expiry beside the old one).
	counted := map[signing.KeyID]int{}
	var sawRevoked, sawExpired, sawInvalid bool
	for _, s := range sigs {
		st := SignatureStatus{KeyID: s.KeyID, Expires: s.Expires}
		tk, known := ts.Keys[s.KeyID]
		if known {
			st.Curator = tk.Name
		}
		_, revoked := ts.Revoked[s.KeyID]
		prev, seen := counted[s.KeyID]
		switch {
		case revoked:
			st.State, sawRevoked = StateRevoked, true
		case !known:
			st.State = StateUntrusted
		case signing.Verify(tk.Key, digest, s) != nil:
			st.State, sawInvalid = StateInvalid, true
		case !s.Expires.IsZero() && !now.Before(s.Expires):
			st.State, sawExpired = StateExpired, true
		case seen:
			st.State = StateDuplicate
			if lastsLonger(s.Expires, d.Signatures[prev].Expires) {
				d.Signatures[prev].State, st.State = StateDuplicate, StateTrusted
				counted[s.KeyID] = len(d.Signatures)
			}
		default:
			st.State = StateTrusted
			counted[s.KeyID] = len(d.Signatures)
			name := tk.Name
			if name == "" {
				name = s.KeyID.String()
			}
			d.Signers = append(d.Signers, name)
		}
		d.Signatures = append(d.Signatures, st)
	}
	sort.Strings(d.Signers)
	n := len(counted)
	switch {
	case n >= threshold:
		return d
	case len(sigs) == 0:
		d.Err = fmt.Errorf("%w: ask a curator to review and sign it (`toolhost curator sign`)", ErrUnsigned)
	case n > 0:
		d.Err = fmt.Errorf("%w: %d of %d required (policy threshold); signed by %s%s", ErrBelowThreshold, n, threshold, strings.Join(d.Signers, ", "), notCounted(d.Signatures))
	case sawInvalid:
		d.Err = fmt.Errorf("%w; get a freshly signed bundle from the curator", ErrBadSignature)
	case sawRevoked:
		d.Err = fmt.Errorf("%w: %s; get the plugin re-signed by a trusted curator", ErrRevoked, keyList(d.Signatures, StateRevoked))
	case sawExpired:
		d.Err = fmt.Errorf("%w: %s; ask the curator to sign it again", ErrExpired, keyList(d.Signatures, StateExpired))
	default:
		d.Err = fmt.Errorf("%w: signed by %s; if you trust that curator, run `toolhost trust add CURATOR.pub`", ErrUntrusted, keyList(d.Signatures, StateUntrusted))
	}
	return d
}

func keyList(ss []SignatureStatus, state SignatureState) string {
	var out []string
	for _, s := range ss {
		if s.State == state {
			name := "key " + s.KeyID.String()
			if s.Curator != "" {
				name = s.Curator + " (" + s.KeyID.String() + ")"
			}
			out = append(out, name)
		}
	}
	return strings.Join(out, ", ")
}

// notCounted names the signatures that did not count and why (a revoked
// curator, an expired signature, ...), so that a plugin stopped by a
// revocation says which key stopped it.
func notCounted(ss []SignatureStatus) string {
	var out []string
	for _, state := range []SignatureState{StateRevoked, StateExpired, StateInvalid, StateUntrusted} {
		if keys := keyList(ss, state); keys != "" {
			out = append(out, string(state)+": "+keys)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; not counted: " + strings.Join(out, "; ")
}

// lastsLonger reports whether a signature expiring at a outlasts one
// expiring at b (the zero time is never).
func lastsLonger(a, b time.Time) bool {
	switch {
	case b.IsZero():
		return false
	case a.IsZero():
		return true
	}
	return a.After(b)
}
