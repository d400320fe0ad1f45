package control_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/api/control"
)

// A policy rule's body, and a caller's answer to an approval question, are read as strictly as a decision: a body that two
// readers could read as different actions (a repeated key, a key in
// another case, a second document) or that carries anything else sets no
// rule and says what the body must be. (It was read by encoding/json,
// which took the last of repeated keys and ignored the rest.)
func TestPolicyBodyIsStrict(t *testing.T) {
	g := governedHost(t)
	srv := httptest.NewServer(control.Handler(g, nil))
	defer srv.Close()
	put := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPut, srv.URL+"/v1/policy/echo", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, body := range []string{
		`{"action":"deny","action":"allow"}`, `{"ACTION":"allow"}`, `{"action":"allow"}{"action":"deny"}`,
		`{"action":"allow","pattern":"delete_*"}`, `{"action":["allow"]}`, `["allow"]`, `{"action":"allow"` + strings.Repeat(" ", 5<<10) + `}`,
	} {
		code, answer := put(body)
		if code != http.StatusUnprocessableEntity || !strings.Contains(answer, `the body must be {\"action\":\"allow\"|\"ask\"|\"deny\"}`) {
			t.Errorf("%.60s: %d %s", body, code, answer)
		}
		if rules := g.Gov.Rules(); len(rules) != 0 {
			t.Fatalf("%.60s set %+v", body, rules)
		}
	}
	if code, answer := put(` {"action":"deny"} `); code != http.StatusOK {
		t.Fatalf("a well-formed body: %d %s", code, answer)
	}
	if rules := g.Gov.Rules(); len(rules) != 1 || rules[0].Action != "deny" {
		t.Fatalf("rules %+v, want echo: deny", rules)
	}
}

func TestElicitationAnswerBodyIsStrict(t *testing.T) {
	srv := httptest.NewServer(control.Handler(governedHost(t), nil))
	defer srv.Close()
	for _, body := range []string{
		`{"approve":false,"approve":true}`, `{"Approve":true}`, `{"approve":true}{"approve":false}`,
		`{"approve":true,"id":"x"}`, `{"approve":"yes"}`, `[true]`,
	} {
		resp, err := http.Post(srv.URL+"/v1/elicitations/q1", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(answer), `the answer must be {\"approve\":true|false`) {
			t.Errorf("%s: %d %s", body, resp.StatusCode, answer)
		}
	}
}
