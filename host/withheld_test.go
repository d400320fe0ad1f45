package host_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/audit"
	"github.com/toolhost/toolhost/host/toolerr"
)

// A call whose audit record cannot be made durable is not answered with
// its result (DESIGN.md: the record is fsync'd before the answer): the
// call ran, but its caller gets internal_error saying the answer is
// withheld and what to do. With a log that keeps records, the same call
// answers and its record is there. The audit log here is the real one,
// refusing records as it does after a failed write (closed).
func TestAnswerWithheldWhenItsRecordIsNotKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), audit.FileName)
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, rigOptions{host: host.Options{Observers: []host.CallObserver{&audit.Recorder{Log: l}}}})
	r.installEcho()

	res, err := r.host.Call(context.Background(), "echo_echo", []byte(`{"kept":1}`))
	if err != nil || !strings.Contains(string(res), `"kept":1`) {
		t.Fatalf("with a working audit log: %s %v", res, err)
	}
	recs, err := audit.RecentFile(path, audit.Filter{})
	if err != nil || len(recs) == 0 || recs[len(recs)-1].Tool != "echo_echo" || recs[len(recs)-1].Outcome != "ok" {
		t.Fatalf("the answered call's record: %+v %v", recs, err)
	}

	l.Close() // refuses every record from now on, as after a failed write
	for _, args := range []string{`{"withheld":1}`, `{"withheld":2}`} {
		res, err = r.host.Call(context.Background(), "echo_echo", []byte(args))
		if res != nil || toolerr.CodeOf(err) != toolerr.CodeInternal ||
			!strings.Contains(err.Error(), "answer is withheld") || !strings.Contains(err.Error(), "restart toolhost") {
			t.Fatalf("a call whose record was not kept answered %s, %v", res, err)
		}
	}
}
