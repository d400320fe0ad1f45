package audit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestCloseRacingAppendsAgreesWithTheFile: appends that race Close either
// return their record, which is then in the file, or an error, and then
// their record is not in it. Before, an append whose record Close had made
// durable could still fail (it then synced a closed file).
func TestCloseRacingAppendsAgreesWithTheFile(t *testing.T) {
	for round := range 30 {
		path := filepath.Join(t.TempDir(), FileName)
		l, err := open(path, 1<<16, func(*os.File) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		var (
			mu       sync.Mutex
			returned = map[string]bool{}
			started  sync.WaitGroup
			wg       sync.WaitGroup
		)
		started.Add(8)
		for g := range 8 {
			wg.Go(func() {
				started.Done()
				for i := range 40 {
					subject := fmt.Sprintf("g%d-%d", g, i)
					_, err := l.Append(Record{Kind: KindChange, Action: "test", Subject: subject})
					mu.Lock()
					returned[subject] = err == nil
					mu.Unlock()
					if err != nil {
						if !strings.Contains(err.Error(), "closed") {
							t.Errorf("round %d: append %s: %v, want the log-closed error", round, subject, err)
						}
						return
					}
				}
			})
		}
		started.Wait()
		if err := l.Close(); err != nil {
			t.Fatalf("round %d: close: %v", round, err)
		}
		wg.Wait()
		if err := l.Close(); err != nil {
			t.Errorf("round %d: a second close: %v", round, err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		inFile := map[string]bool{}
		for line := range bytes.Lines(data) { // none when Close came first
			line = bytes.TrimSuffix(line, []byte("\n"))
			r, err := ParseLine(line)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			inFile[r.Subject] = true
		}
		for subject, ok := range returned {
			if ok != inFile[subject] {
				t.Errorf("round %d: record %s: Append returned ok=%v, in the file: %v", round, subject, ok, inFile[subject])
			}
		}
	}
}
