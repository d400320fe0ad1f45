package plugin

import (
	"strings"
	"testing"
)

// x-mcp-header (MCP SEP-2243) is accepted where an MCP client can honour
// it, and refused at parse time, with the property named, where the MCP SDK
// would leave the tool out.
func TestMCPHeaderAnnotations(t *testing.T) {
	withParams := func(params string) string {
		return replace(t, `{"type": "object", "properties": {"timezone": {"type": "string"}}}`, params)
	}
	for _, ok := range []string{
		`{"type": "object", "properties": {"timezone": {"type": "string", "x-mcp-header": "Timezone"}}}`,
		`{"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}, "b": {"type": "boolean", "x-mcp-header": "Flag-1.x"}}}`,
		`{"type": "object", "properties": {"where": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}}}`,
	} {
		if _, err := ParseManifest([]byte(withParams(ok))); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, c := range []struct{ params, want string }{
		{`{"type": "object", "properties": {"tz": {"type": "string", "x-mcp-header": ""}}}`, `property "tz": x-mcp-header must be a non-empty string`},
		{`{"type": "object", "properties": {"tz": {"type": "string", "x-mcp-header": 7}}}`, `property "tz": x-mcp-header must be a non-empty string`},
		{`{"type": "object", "properties": {"tz": {"type": "string", "x-mcp-header": "Time Zone"}}}`, `x-mcp-header "Time Zone" has ' '`},
		{`{"type": "object", "properties": {"tz": {"type": "string", "x-mcp-header": "Zoné"}}}`, `has 'é'`},
		{`{"type": "object", "properties": {"tz": {"type": "number", "x-mcp-header": "Tz"}}}`, `property "tz": x-mcp-header needs "type" "string", "integer" or "boolean"`},
		{`{"type": "object", "properties": {"tz": {"type": ["string", "null"], "x-mcp-header": "Tz"}}}`, `needs "type"`},
		{`{"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Tz"}, "b": {"type": "object", "properties": {"c": {"type": "string", "x-mcp-header": "tz"}}}}}`, `both use x-mcp-header`},
	} {
		_, err := ParseManifest([]byte(withParams(c.params)))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "tools[0] (get_current_time).parameters") {
			t.Errorf("%s: error %v, want one naming the tool and containing %q", c.params, err, c.want)
		}
	}
}
