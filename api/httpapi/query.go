package httpapi

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/internal/strictjson"
)

// queryParams parses r's query strictly for a route that takes the named
// parameters: a parameter it does not know (a typo such as fromat=openai,
// which used to give the default answer as if it were the one asked for),
// one given twice, or a query that does not parse is invalid_request,
// naming the parameters the route takes.
func queryParams(r *http.Request, known ...string) (url.Values, *toolerr.Error) {
	takes := "no query parameters"
	if len(known) > 0 {
		takes = "only " + strings.Join(known, ", ")
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, toolerr.Errorf(CodeInvalidRequest, "the query does not parse (%s): %s takes %s", strictjson.Shown(err.Error()), r.URL.Path, takes)
	}
	for name, values := range q {
		if !slices.Contains(known, name) {
			return nil, toolerr.Errorf(CodeInvalidRequest, "unknown query parameter %q: %s takes %s", strictjson.Shown(name), r.URL.Path, takes)
		}
		if len(values) > 1 {
			return nil, toolerr.Errorf(CodeInvalidRequest, "query parameter %q is given %d times: give it once", name, len(values))
		}
	}
	return q, nil
}
