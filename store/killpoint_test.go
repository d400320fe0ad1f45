package store_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/signing"
	"github.com/toolhost/toolhost/store"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("STORE_TEST_WRITER"); dir != "" {
		os.Exit(writer(dir))
	}
	os.Exit(m.Run())
}

// killWasm is plugin i's wasm: big enough to go to badger's value log.
func killWasm(i int) []byte {
	return bytes.Repeat([]byte{byte(i)}, 2<<20+i)
}

// writer installs plugins and trusts and revokes keys until killed,
// printing "ok N" after write N is acknowledged.
func writer(dir string) int {
	st, err := store.Open(dir, nil)
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	start := 0
	if ps, err := st.Plugins(); err == nil {
		start = len(ps)
	}
	for i := start; ; i++ {
		wasm := killWasm(i)
		name := "p" + strconv.Itoa(i)
		if err := st.PutPlugin(record(name, "1.0."+strconv.Itoa(i), wasm), wasm, store.HighWaterMark{Version: "1.0." + strconv.Itoa(i)}); err != nil {
			fmt.Println("put:", err)
			return 1
		}
		k, _ := signing.GenerateKey(nil)
		if err := st.AddTrustedKey(curator.TrustedKey{Name: name, Key: k.Public(), AddedAt: time.Now()}); err != nil {
			fmt.Println("trust:", err)
			return 1
		}
		if err := st.Revoke(k.Public().ID(), time.Now()); err != nil {
			fmt.Println("revoke:", err)
			return 1
		}
		fmt.Printf("ok %d %s\n", i, k.Public().ID())
	}
}

// TestKillAtManyPoints runs installs in a child process, kills it with
// SIGKILL at many points (from during its first Open to the middle of
// later writes), and reopens the store each time: it must open with no
// manual repair, hold every acknowledged write, keep every acknowledged
// revocation, and hold a journal entry for exactly the changes in effect.
func TestKillAtManyPoints(t *testing.T) {
	// One store killed again and again, at growing delays.
	n := killRounds(t, filepath.Join(t.TempDir(), "store"), []time.Duration{0, 2, 5, 10, 15, 20, 30, 40, 50, 65, 80, 100, 120, 150, 200, 250, 300, 450, 600})
	t.Logf("%d writes acknowledged over 19 kills of one store", n)
	// New stores killed during their first Open (the key and seal being
	// created).
	for _, d := range []time.Duration{1, 3, 6, 9, 12, 18, 25, 35} {
		killRounds(t, filepath.Join(t.TempDir(), "store"), []time.Duration{d, 100})
	}
}

func killRounds(t *testing.T, dir string, delays []time.Duration) int {
	acked := map[int]string{} // plugin index → revoked key
	for round, d := range delays {
		d *= time.Millisecond
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "STORE_TEST_WRITER="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		time.Sleep(d)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		for line := range lines {
			f := strings.Fields(line)
			if len(f) == 3 && f[0] == "ok" {
				i, _ := strconv.Atoi(f[1])
				acked[i] = f[2]
			} else {
				t.Fatalf("round %d: writer: %s", round, line)
			}
		}
		st, err := store.Open(dir, nil)
		if err != nil {
			t.Fatalf("round %d (killed after %v): reopen: %v", round, d, err)
		}
		ts, err := st.TrustSet()
		if err != nil {
			t.Fatalf("round %d: trust set: %v", round, err)
		}
		// Each change in effect has its journal entry and no entry lacks
		// its change: the writer's changes are installs, trust adds and
		// revocations, one entry each, whatever the kill cut.
		ps, err := st.Plugins()
		if err != nil {
			t.Fatalf("round %d: plugins: %v", round, err)
		}
		if seq, err := st.JournalSeq(); err != nil || seq != uint64(len(ps)+len(ts.Keys)+len(ts.Revoked)) {
			t.Fatalf("round %d: journal seq %d (%v), but %d installs, %d trusted keys and %d revocations are in effect",
				round, seq, err, len(ps), len(ts.Keys), len(ts.Revoked))
		}
		for i, id := range acked {
			rec, err := st.Plugin("p" + strconv.Itoa(i))
			if err != nil {
				t.Fatalf("round %d: acknowledged install %d lost: %v", round, i, err)
			}
			if blob, err := st.Blob(rec.WasmSHA256); err != nil || !bytes.Equal(blob, killWasm(i)) {
				t.Fatalf("round %d: wasm of install %d: %v", round, i, err)
			}
			kid, _ := signing.ParseKeyID(id)
			if _, ok := ts.Revoked[kid]; !ok {
				t.Fatalf("round %d: acknowledged revocation of %s lost", round, id)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return len(acked)
}
