package control_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/govern"
	"github.com/toolhost/toolhost/host/toolerr"
)

// askingHost serves a host whose governor asks before every call of echo,
// on a control socket.
func askingHost(t *testing.T) (*govern.Governor, func(ctx context.Context) (string, error)) {
	t.Helper()
	rec := &recorder{recs: make(chan host.CallRecord, 8)}
	h, c := socketHost(t, rec)
	installWasm(t, h, "echo", "../../host/testdata/echo/echo.wasm", "echo", 2000)
	gov, err := govern.New(govern.Options{Store: h.Store(), ApprovalTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := gov.SetPolicy("echo", "ask", "test"); err != nil {
		t.Fatal(err)
	}
	h.SetGovernor(gov)
	call := func(ctx context.Context) (string, error) {
		res, err := c.Call(ctx, "echo", []byte(`{"n":1}`))
		return string(res), err
	}
	return gov, call
}

// A call forwarded over the socket by a caller that can ask its user
// (`toolhost mcp` while serve runs): the question crosses the socket to the
// caller's Elicitor, and its answer decides, as the MCP client's.
func TestSocketCallAsksTheCallersUser(t *testing.T) {
	gov, call := askingHost(t)
	for _, approve := range []bool{true, false} {
		questions := make(chan govern.Pending, 4)
		ask := func(_ context.Context, p govern.Pending) (govern.Answer, error) {
			questions <- p
			return govern.Answer{Approve: approve, Reason: "the test says so"}, nil
		}
		res, err := call(govern.WithElicitor(context.Background(), ask))
		close(questions)
		var asked []govern.Pending
		for p := range questions {
			asked = append(asked, p)
		}
		if len(asked) != 1 || asked[0].Tool != "echo" || string(asked[0].Arguments) != `{"n":1}` || asked[0].ID == "" {
			t.Fatalf("approve=%v: the caller was asked %+v, want once about echo {\"n\":1}", approve, asked)
		}
		if approve && (err != nil || !strings.Contains(res, `"n":1`)) {
			t.Fatalf("approved call: %q, %v", res, err)
		}
		if !approve && (toolerr.CodeOf(err) != toolerr.CodeDenied || !strings.Contains(err.Error(), "MCP client") || !strings.Contains(err.Error(), "the test says so")) {
			t.Fatalf("refused call: %q, %v; want denied by the MCP client's user with the reason", res, err)
		}
	}
	if ps := gov.Approvals().List(); len(ps) != 0 {
		t.Errorf("approvals still pending: %+v", ps)
	}
}

// A caller that cannot ask its user says so; the call then waits for an
// operator, as one without elicitation does.
func TestSocketCallUnansweredWaitsForOperator(t *testing.T) {
	gov, call := askingHost(t)
	asked := make(chan struct{}, 1)
	ask := func(context.Context, govern.Pending) (govern.Answer, error) {
		asked <- struct{}{}
		return govern.Answer{}, errors.New("this client cannot show a form")
	}
	type outcome struct {
		res string
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := call(govern.WithElicitor(context.Background(), ask))
		done <- outcome{res, err}
	}()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the caller was not asked within 30s")
	}
	var pending []govern.Pending
	for deadline := time.Now().Add(30 * time.Second); len(pending) == 0 && time.Now().Before(deadline); {
		pending = gov.Approvals().List()
		time.Sleep(10 * time.Millisecond)
	}
	if len(pending) != 1 {
		t.Fatalf("pending approvals %+v, want the call", pending)
	}
	select {
	case o := <-done:
		t.Fatalf("the call ended (%q, %v) before anybody decided", o.res, o.err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := gov.Approvals().Decide(pending[0].ID, true, "", "cli"); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-done:
		if o.err != nil || !strings.Contains(o.res, `"n":1`) {
			t.Fatalf("call approved by the operator: %q, %v", o.res, o.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not end within 30s of the operator's approval")
	}
}
