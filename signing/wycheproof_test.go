package signing

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The Wycheproof ed25519 vectors are fetched the way Go's own crypto tests
// fetch test data: as a Go module at a pinned pseudo-version, through the
// module proxy, into the module cache (so the download happens once).
const (
	wycheproofModule  = "github.com/C2SP/wycheproof"
	wycheproofVersion = "v0.0.0-20250901140545-b51abcfb8daf"
	wycheproofFile    = "testvectors_v1/ed25519_test.json"
)

type wycheproofFileJSON struct {
	Algorithm     string `json:"algorithm"`
	NumberOfTests int    `json:"numberOfTests"`
	TestGroups    []struct {
		PublicKey struct {
			PK string `json:"pk"`
		} `json:"publicKey"`
		Tests []struct {
			TcID    int      `json:"tcId"`
			Comment string   `json:"comment"`
			Flags   []string `json:"flags"`
			Msg     string   `json:"msg"`
			Sig     string   `json:"sig"`
			Result  string   `json:"result"`
		} `json:"tests"`
	} `json:"testGroups"`
}

// fetchModule returns the directory of module@version in the module cache,
// downloading it if needed, or skips the test when that is not possible.
func fetchModule(t *testing.T, module, version string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("SKIP: Wycheproof vectors not checked: no go command to fetch %s@%s: %v", module, version, err)
	}
	cmd := exec.Command(goTool, "mod", "download", "-json", module+"@"+version)
	cmd.Dir = t.TempDir() // outside any module, so go.mod and go.sum stay untouched
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-modcacherw")
	out, err := cmd.Output()
	var j struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &j); err != nil || jerr != nil || j.Dir == "" {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Skipf("SKIP: Wycheproof vectors not checked: go mod download %s@%s failed (no network or proxy?): %v %s\n%s%s",
			module, version, err, j.Error, out, stderr)
	}
	return j.Dir
}

func TestWycheproofEd25519(t *testing.T) {
	dir := fetchModule(t, wycheproofModule, wycheproofVersion)
	data, err := os.ReadFile(filepath.Join(dir, wycheproofFile))
	if err != nil {
		t.Fatalf("%s@%s: %v", wycheproofModule, wycheproofVersion, err)
	}
	var f wycheproofFileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if f.Algorithm != "EDDSA" && f.Algorithm != "Ed25519" {
		t.Fatalf("algorithm %q", f.Algorithm)
	}
	counts := map[string]int{}
	for _, g := range f.TestGroups {
		pkRaw := mustHex(t, g.PublicKey.PK)
		pub, keyErr := NewPublicKey(pkRaw)
		if keyErr == nil {
			// Every key that parses survives the text form.
			back, err := ParsePublicKey(pub.String())
			if err != nil || !back.Equal(pub) {
				t.Errorf("key %s: text round trip: %v", g.PublicKey.PK, err)
			}
		}
		for _, tc := range g.Tests {
			msg, sig := mustHex(t, tc.Msg), mustHex(t, tc.Sig)
			got := keyErr == nil && verifyRaw(pub, msg, sig)

			// Through the text form of signatures too: only 64-byte
			// signatures decode at all.
			if _, err := DecodeSig(base64.StdEncoding.EncodeToString(sig)); (err == nil) != (len(sig) == 64) {
				t.Errorf("tcId %d: DecodeSig of a %d-byte signature: %v", tc.TcID, len(sig), err)
			}

			var want bool
			switch tc.Result {
			case "valid":
				want = true
			case "invalid":
				want = false
			default:
				// No "acceptable" ed25519 vectors exist at this version;
				// if a new version adds some, decide them explicitly.
				t.Errorf("tcId %d: result %q has no expected outcome here", tc.TcID, tc.Result)
				continue
			}
			counts[tc.Result]++
			if got != want {
				t.Errorf("tcId %d (%s; flags %v): verified=%v, want %v (key error: %v)", tc.TcID, tc.Comment, tc.Flags, got, want, keyErr)
			}
		}
	}
	total := counts["valid"] + counts["invalid"]
	if total != f.NumberOfTests || total == 0 {
		t.Errorf("ran %d vectors, the file declares %d", total, f.NumberOfTests)
	}
	t.Logf("%s@%s %s: %d vectors in %d groups (%d valid, %d invalid)",
		wycheproofModule, wycheproofVersion, wycheproofFile, total, len(f.TestGroups), counts["valid"], counts["invalid"])
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex in test vector: %v", err)
	}
	return b
}
