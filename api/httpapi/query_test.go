package httpapi

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/audit"
)

// A query the route does not take is refused with invalid_request naming
// what it takes: an unknown parameter (a typo such as fromat=openai used
// to answer with toolhost's own listing, as if it were OpenAI's shape), a
// parameter given twice (only the first counted), a query that does not
// parse (dropped). The parameters the route takes still work.
func TestQueryParametersAreStrict(t *testing.T) {
	log, err := audit.Open(filepath.Join(t.TempDir(), audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	_, srv := serve(t, newFake(), Options{AuditFile: log.Path()})
	for _, c := range []struct{ query, want string }{
		{"/v1/tools?fromat=openai", `unknown query parameter \"fromat\": /v1/tools takes only format, strict`},
		{"/v1/tools?format=openai&x=1", `unknown query parameter \"x\"`},
		{"/v1/tools?format=openai&format=mcp", `query parameter \"format\" is given 2 times`},
		{"/v1/tools?strict=true&strict=false&format=openai", `query parameter \"strict\" is given 2 times`},
		{"/v1/tools?format=%zz", "the query does not parse"},
		{"/v1/audit?limit=2", `unknown query parameter \"limit\": /v1/audit takes only since, tool`},
		{"/v1/audit?tool=a&tool=b", `query parameter \"tool\" is given 2 times`},
		{"/v1/audit?since=1h;tool=x", "the query does not parse"},
	} {
		r := do(t, srv, "GET", c.query, "", "")
		if r.status != 400 || r.errorCode() != "invalid_request" || !strings.Contains(string(r.body), c.want) {
			t.Errorf("GET %s: %d %s, want 400 invalid_request saying %s", c.query, r.status, r.body, c.want)
		}
	}
	for _, ok := range []string{"/v1/tools", "/v1/tools?format=openai", "/v1/tools?format=openai&strict=true", "/v1/tools?", "/v1/audit?since=1h&tool=x", "/v1/audit"} {
		if r := do(t, srv, "GET", ok, "", ""); r.status != 200 {
			t.Errorf("GET %s: %d %s, want 200", ok, r.status, r.body)
		}
	}
}
