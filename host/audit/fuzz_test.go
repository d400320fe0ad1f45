package audit

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// FuzzVerify feeds arbitrary bytes to the parser and verifier: they never
// panic, every failure names a line, and whatever verifies re-verifies
// after being parsed and encoded again.
func FuzzVerify(f *testing.F) {
	l, _ := Open(f.TempDir() + "/" + FileName)
	l.Append(Record{Kind: KindCall, Tool: "t", Outcome: "ok", DurationMS: 1.5})
	l.Append(Record{Kind: KindChange, Action: "install", Subject: "x"})
	l.Close()
	seed, _ := readAll(l.Path())
	f.Add(seed)
	f.Add([]byte(`{"seq":1}` + "\n"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Verify(bytes.NewReader(data), "")
		if err != nil {
			var bad *BadRecordError
			if !errors.As(err, &bad) || bad.Line < 1 {
				t.Fatalf("error does not name a line: %v", err)
			}
			return
		}
		var again []byte
		for _, line := range bytes.SplitAfter(data, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			r, err := ParseLine(bytes.TrimSuffix(line, []byte("\n")))
			if err != nil {
				t.Fatalf("verified, yet a line does not parse: %v", err)
			}
			enc, _, _ := encode(r)
			again = append(append(again, enc...), '\n')
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("verified log is not canonical:\n%q\n%q", data, again)
		}
		if s.Records > 0 {
			if _, err := Verify(bytes.NewReader(data), s.Head); err != nil {
				t.Fatalf("own head refused: %v", err)
			}
		}
	})
}

func readAll(path string) ([]byte, error) { return os.ReadFile(path) }
