package curator

import (
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhost/toolhost/signing"
)

var (
	policyNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	wasmSum   = sha256.Sum256([]byte("\x00asm\x01\x00\x00\x00"))
	digest    = signing.PluginDigest([]byte(`{"name":"p"}`), wasmSum)
	digest2   = signing.PluginDigest([]byte(`{"name":"q"}`), wasmSum)
)

var allReasons = []error{ErrUnsigned, ErrUntrusted, ErrRevoked, ErrExpired, ErrBelowThreshold, ErrBadSignature}

func TestEvaluate(t *testing.T) {
	alice, bob, carol, rex := seedKey(t, 11), seedKey(t, 12), seedKey(t, 13), seedKey(t, 14)
	id := func(k signing.PrivateKey) signing.KeyID { return k.Public().ID() }
	trust := func(threshold int, keys ...signing.PrivateKey) TrustSet {
		ts := TrustSet{Keys: map[signing.KeyID]TrustedKey{}, Revoked: map[signing.KeyID]time.Time{id(rex): policyNow.Add(-time.Hour)}, Threshold: threshold}
		names := map[signing.KeyID]string{id(alice): "alice", id(bob): "bob", id(carol): "carol", id(rex): "rex"}
		for _, k := range keys {
			ts.Keys[id(k)] = TrustedKey{Name: names[id(k)], Key: k.Public()}
		}
		return ts
	}
	sign := func(k signing.PrivateKey) signing.Signature { return signing.Sign(k, digest, time.Time{}) }
	signUntil := func(k signing.PrivateKey, exp time.Time) signing.Signature { return signing.Sign(k, digest, exp) }
	// A signature by k over another plugin, presented as one over digest.
	wrongDigest := func(k signing.PrivateKey) signing.Signature { return signing.Sign(k, digest2, time.Time{}) }
	// A signature that names k but was made by someone else.
	forged := func(k, by signing.PrivateKey) signing.Signature { s := sign(by); s.KeyID = id(k); return s }
	// An expired signature whose expiry was moved into the future.
	extended := func(k signing.PrivateKey) signing.Signature {
		s := signUntil(k, policyNow.Add(-time.Hour))
		s.Expires = policyNow.Add(24 * time.Hour)
		return s
	}
	sigs := func(s ...signing.Signature) []signing.Signature { return s }

	const (
		T = StateTrusted
		U = StateUntrusted
		R = StateRevoked
		E = StateExpired
		I = StateInvalid
		D = StateDuplicate
	)
	tests := []struct {
		name    string
		ts      TrustSet
		sigs    []signing.Signature
		want    error // nil: allowed
		states  []SignatureState
		signers []string
		msg     []string // substrings of the error message
	}{
		{"unsigned", trust(1, alice), nil, ErrUnsigned, nil, nil, []string{"toolhost curator sign"}},
		{"unsigned, empty trust", TrustSet{}, sigs(), ErrUnsigned, nil, nil, nil},
		{"untrusted signer", trust(1, alice), sigs(sign(carol)), ErrUntrusted, []SignatureState{U}, nil, []string{"key " + id(carol).String(), "toolhost trust add"}},
		{"no trusted keys at all", TrustSet{}, sigs(sign(alice)), ErrUntrusted, []SignatureState{U}, nil, nil},
		{"trusted signer", trust(1, alice), sigs(sign(alice)), nil, []SignatureState{T}, []string{"alice"}, nil},
		{"trusted among untrusted", trust(1, alice), sigs(sign(carol), sign(alice)), nil, []SignatureState{U, T}, []string{"alice"}, nil},
		{"threshold 0 means 1", trust(0, alice), sigs(), ErrUnsigned, nil, nil, nil},
		{"negative threshold means 1", trust(-5, alice), sigs(sign(carol)), ErrUntrusted, []SignatureState{U}, nil, nil},

		// Threshold.
		{"threshold 2, one signature", trust(2, alice, bob), sigs(sign(alice)), ErrBelowThreshold, []SignatureState{T}, []string{"alice"}, []string{"1 of 2 required", "signed by alice"}},
		{"threshold 2, same key twice", trust(2, alice, bob), sigs(sign(alice), sign(alice)), ErrBelowThreshold, []SignatureState{T, D}, []string{"alice"}, []string{"1 of 2"}},
		{"threshold 2, same key with two expiries", trust(2, alice, bob), sigs(sign(alice), signUntil(alice, policyNow.Add(time.Hour))), ErrBelowThreshold, []SignatureState{T, D}, []string{"alice"}, nil},
		{"threshold 2, two keys", trust(2, alice, bob), sigs(sign(bob), sign(alice)), nil, []SignatureState{T, T}, []string{"alice", "bob"}, nil},
		{"threshold 2, two keys and an untrusted one", trust(2, alice, bob), sigs(sign(carol), sign(alice), sign(bob)), nil, []SignatureState{U, T, T}, []string{"alice", "bob"}, nil},
		{"threshold 2, one trusted and one untrusted", trust(2, alice, bob), sigs(sign(alice), sign(carol)), ErrBelowThreshold, []SignatureState{T, U}, []string{"alice"}, nil},
		{"threshold 3 of 3", trust(3, alice, bob, carol), sigs(sign(alice), sign(bob), sign(carol)), nil, []SignatureState{T, T, T}, []string{"alice", "bob", "carol"}, nil},
		{"threshold above the trusted keys", trust(3, alice, bob), sigs(sign(alice), sign(bob)), ErrBelowThreshold, []SignatureState{T, T}, []string{"alice", "bob"}, []string{"2 of 3"}},

		// Revocation.
		{"revoked signer", trust(1, alice), sigs(sign(rex)), ErrRevoked, []SignatureState{R}, nil, []string{"key " + id(rex).String()}},
		{"revoked signer also trusted", trust(1, alice, rex), sigs(sign(rex)), ErrRevoked, []SignatureState{R}, nil, []string{"rex (" + id(rex).String() + ")"}},
		{"revoked twice does not add up", trust(1, rex), sigs(sign(rex), sign(rex)), ErrRevoked, []SignatureState{R, R}, nil, nil},
		{"revoked plus trusted, threshold 1", trust(1, alice, rex), sigs(sign(rex), sign(alice)), nil, []SignatureState{R, T}, []string{"alice"}, nil},
		{"revoked plus trusted, threshold 2", trust(2, alice, rex), sigs(sign(rex), sign(alice)), ErrBelowThreshold, []SignatureState{R, T}, []string{"alice"}, []string{"1 of 2"}},
		{"revoked signature that does not verify", trust(1, rex), sigs(wrongDigest(rex)), ErrRevoked, []SignatureState{R}, nil, nil},

		// Expiry.
		{"expired", trust(1, alice), sigs(signUntil(alice, policyNow.Add(-time.Second))), ErrExpired, []SignatureState{E}, nil, []string{"alice (" + id(alice).String() + ")", "sign it again"}},
		{"expires exactly now", trust(1, alice), sigs(signUntil(alice, policyNow)), ErrExpired, []SignatureState{E}, nil, nil},
		{"expires in a second", trust(1, alice), sigs(signUntil(alice, policyNow.Add(time.Second))), nil, []SignatureState{T}, []string{"alice"}, nil},
		{"expired and a fresh one by the same key", trust(1, alice), sigs(signUntil(alice, policyNow.Add(-time.Hour)), sign(alice)), nil, []SignatureState{E, T}, []string{"alice"}, nil},
		{"expiry moved forward", trust(1, alice), sigs(extended(alice)), ErrBadSignature, []SignatureState{I}, nil, nil},
		{"threshold 2, one of two expired", trust(2, alice, bob), sigs(sign(alice), signUntil(bob, policyNow.Add(-time.Hour))), ErrBelowThreshold, []SignatureState{T, E}, []string{"alice"}, nil},

		// Invalid signatures.
		{"trusted key, other plugin's signature", trust(1, alice), sigs(wrongDigest(alice)), ErrBadSignature, []SignatureState{I}, nil, []string{"freshly signed"}},
		{"trusted key named, untrusted key signed", trust(1, alice), sigs(forged(alice, carol)), ErrBadSignature, []SignatureState{I}, nil, nil},
		{"invalid and valid by different keys", trust(1, alice, bob), sigs(wrongDigest(alice), sign(bob)), nil, []SignatureState{I, T}, []string{"bob"}, nil},
		{"invalid does not count toward threshold", trust(2, alice, bob), sigs(wrongDigest(alice), sign(bob)), ErrBelowThreshold, []SignatureState{I, T}, []string{"bob"}, nil},
		{"zero signature bytes", trust(1, alice), sigs(signing.Signature{KeyID: id(alice)}), ErrBadSignature, []SignatureState{I}, nil, nil},
		{"trusted key stored under another ID", TrustSet{Keys: map[signing.KeyID]TrustedKey{id(alice): {Name: "alice", Key: bob.Public()}}}, sigs(sign(alice)), ErrBadSignature, []SignatureState{I}, nil, nil},
		{"trusted entry with a zero key", TrustSet{Keys: map[signing.KeyID]TrustedKey{id(alice): {Name: "alice"}}}, sigs(sign(alice)), ErrBadSignature, []SignatureState{I}, nil, nil},

		// Mixed refusals: the reason is the most useful one.
		{"untrusted and revoked", trust(1, alice), sigs(sign(carol), sign(rex)), ErrRevoked, []SignatureState{U, R}, nil, nil},
		{"untrusted and expired", trust(1, alice), sigs(sign(carol), signUntil(alice, policyNow.Add(-time.Hour))), ErrExpired, []SignatureState{U, E}, nil, nil},
		{"revoked and expired", trust(1, alice), sigs(sign(rex), signUntil(alice, policyNow.Add(-time.Hour))), ErrRevoked, []SignatureState{R, E}, nil, nil},
		{"invalid and revoked", trust(1, alice), sigs(sign(rex), wrongDigest(alice)), ErrBadSignature, []SignatureState{R, I}, nil, nil},
		{"invalid and expired", trust(1, alice, bob), sigs(signUntil(bob, policyNow.Add(-time.Hour)), wrongDigest(alice)), ErrBadSignature, []SignatureState{E, I}, nil, nil},

		// Names.
		{"trusted key without a name", TrustSet{Keys: map[signing.KeyID]TrustedKey{id(alice): {Key: alice.Public()}}}, sigs(sign(alice)), nil, []SignatureState{T}, []string{id(alice).String()}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Evaluate(digest, tt.sigs, tt.ts, policyNow)
			if d.Allowed() != (tt.want == nil) {
				t.Fatalf("Allowed() = %v, Err = %v; want %v", d.Allowed(), d.Err, tt.want)
			}
			for _, reason := range allReasons {
				if is := errors.Is(d.Err, reason); is != (reason == tt.want) {
					t.Errorf("errors.Is(%v, %v) = %v", d.Err, reason, is)
				}
			}
			var states []SignatureState
			for i, st := range d.Signatures {
				states = append(states, st.State)
				if st.KeyID != tt.sigs[i].KeyID || !st.Expires.Equal(tt.sigs[i].Expires) {
					t.Errorf("signature %d: status %+v does not describe it", i, st)
				}
			}
			if diff := cmp.Diff(tt.states, states); diff != "" {
				t.Errorf("states (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.signers, d.Signers); diff != "" {
				t.Errorf("signers (-want +got):\n%s", diff)
			}
			if want := max(tt.ts.Threshold, 1); d.Threshold != want {
				t.Errorf("Threshold = %d, want %d", d.Threshold, want)
			}
			for _, m := range tt.msg {
				if d.Err == nil || !strings.Contains(d.Err.Error(), m) {
					t.Errorf("error %v does not contain %q", d.Err, m)
				}
			}
		})
	}
}

// TestEvaluateCuratorNames checks that statuses carry the trust store's
// names, for `toolhost plugin verify`.
func TestEvaluateCuratorNames(t *testing.T) {
	alice, carol := seedKey(t, 11), seedKey(t, 13)
	ts := TrustSet{Keys: map[signing.KeyID]TrustedKey{alice.Public().ID(): {Name: "alice", Key: alice.Public()}}}
	d := Evaluate(digest, []signing.Signature{signing.Sign(alice, digest, time.Time{}), signing.Sign(carol, digest, time.Time{})}, ts, policyNow)
	want := []SignatureStatus{
		{KeyID: alice.Public().ID(), Curator: "alice", State: StateTrusted},
		{KeyID: carol.Public().ID(), Curator: "", State: StateUntrusted},
	}
	if diff := cmp.Diff(want, d.Signatures); diff != "" {
		t.Errorf("Signatures (-want +got):\n%s", diff)
	}
}

// TestBelowThresholdNamesWhatDidNotCount: a plugin that falls below the
// threshold because a key was revoked (or a signature expired, or a signer
// is not trusted) says which signature stopped counting and why, not only
// who still counts.
func TestBelowThresholdNamesWhatDidNotCount(t *testing.T) {
	alice, carol, dave := seedKey(t, 21), seedKey(t, 22), seedKey(t, 23)
	ts := TrustSet{Keys: map[signing.KeyID]TrustedKey{
		alice.Public().ID(): {Name: "alice", Key: alice.Public()},
		carol.Public().ID(): {Name: "carol", Key: carol.Public()},
	}, Revoked: map[signing.KeyID]time.Time{}, Threshold: 2}
	for _, tc := range []struct {
		name  string
		other signing.Signature
		setup func(TrustSet)
		want  string
	}{
		{"revoked", signing.Sign(carol, digest, time.Time{}), func(ts TrustSet) { ts.Revoked[carol.Public().ID()] = policyNow }, "not counted: revoked: carol (" + carol.Public().ID().String() + ")"},
		{"expired", signing.Sign(carol, digest, policyNow.Add(-time.Hour)), func(TrustSet) {}, "not counted: expired: carol"},
		{"untrusted", signing.Sign(dave, digest, time.Time{}), func(TrustSet) {}, "not counted: untrusted: key " + dave.Public().ID().String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := ts
			ts.Revoked = map[signing.KeyID]time.Time{}
			tc.setup(ts)
			d := Evaluate(digest, []signing.Signature{signing.Sign(alice, digest, time.Time{}), tc.other}, ts, policyNow)
			if !errors.Is(d.Err, ErrBelowThreshold) || !strings.Contains(d.Err.Error(), tc.want) || !strings.Contains(d.Err.Error(), "signed by alice") {
				t.Fatalf("err = %v, want ErrBelowThreshold naming %q", d.Err, tc.want)
			}
		})
	}
	// Nothing that did not count: nothing added.
	d := Evaluate(digest, []signing.Signature{signing.Sign(alice, digest, time.Time{})}, ts, policyNow)
	if strings.Contains(d.Err.Error(), "not counted") {
		t.Fatalf("err = %v", d.Err)
	}
}
