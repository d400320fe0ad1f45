package plugin

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// checkMCPHeaders checks the x-mcp-header annotations of a tool's
// parameters (MCP SEP-2243). The keyword is a JSON Schema annotation, so
// validation ignores it; MCP clients of 2026-07-28 mirror each annotated
// argument into an Mcp-Param-<name> HTTP header, which the server checks
// against the body. The MCP SDK refuses a tool whose annotation it cannot
// honour, which would leave the tool out of MCP: refusing the manifest
// instead tells the author at pack time. The rules are the SDK's: on a
// property (at any depth of nested "properties") of type string, integer
// or boolean, a non-empty HTTP token, unique ignoring case.
func checkMCPHeaders(raw json.RawMessage) error {
	var root mcpHeaderSchema
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil // CompileSchema reports what is wrong with it
	}
	return root.check("", map[string]string{})
}

type mcpHeaderSchema struct {
	Type       any                        `json:"type"`
	Header     *json.RawMessage           `json:"x-mcp-header"`
	Properties map[string]mcpHeaderSchema `json:"properties"`
}

func (s mcpHeaderSchema) check(path string, seen map[string]string) error {
	for name, p := range s.Properties {
		at := name
		if path != "" {
			at = path + "." + name
		}
		if p.Header != nil {
			var header string
			if json.Unmarshal(*p.Header, &header) != nil || header == "" {
				return fmt.Errorf("property %q: x-mcp-header must be a non-empty string (the NAME of an Mcp-Param-NAME header)", at)
			}
			if i := strings.IndexFunc(header, func(r rune) bool { return !isHeaderTokenRune(r) }); i >= 0 {
				bad, _ := utf8.DecodeRuneInString(header[i:])
				return fmt.Errorf("property %q: x-mcp-header %q has %q, which an HTTP header name cannot: use letters, digits and !#$%%&'*+-.^_`|~", at, truncate(header), bad)
			}
			if t, _ := p.Type.(string); t != "string" && t != "integer" && t != "boolean" {
				return fmt.Errorf("property %q: x-mcp-header needs \"type\" \"string\", \"integer\" or \"boolean\" (a header carries one plain value)", at)
			}
			if other, dup := seen[strings.ToLower(header)]; dup {
				return fmt.Errorf("properties %q and %q both use x-mcp-header %q (header names ignore case)", other, at, header)
			}
			seen[strings.ToLower(header)] = at
		}
		if err := p.check(at, seen); err != nil {
			return err
		}
	}
	return nil
}

// isHeaderTokenRune reports whether r may appear in an HTTP field name
// (RFC 9110 tchar).
func isHeaderTokenRune(r rune) bool {
	switch {
	case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}
