package plugin

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSchemaHiddenText(t *testing.T) {
	accepted := []string{
		// An emoji presentation selector a pattern must match, escaped.
		`{"type":"object","properties":{"mood":{"type":"string","pattern":"^\u2764\ufe0f$"}}}`,
		`{"type":"object","properties":{"mood":{"const":"\u200d"}}}`,
		`{"type":"object","properties":{"mood":{"enum":["a","\ufe0f"]}}}`,
		`{"type":"object","patternProperties":{"^x\u200b$":{"type":"string"}}}`,
	}
	for _, s := range accepted {
		if _, err := CompileSchema(json.RawMessage(s)); err != nil {
			t.Errorf("CompileSchema(%s): %v", s, err)
		}
	}
	refused := []struct{ schema, want string }{
		{`{"type":"object","properties":{"q":{"type":"string","description":"find\ufe0f it"}}}`, "/properties/q/description contains U+FE0F VARIATION SELECTOR-16 at character 5"},
		{`{"type":"object","properties":{"q\u200b":{"type":"string"}}}`, `the key /properties/q\u{200b} contains U+200B ZERO WIDTH SPACE`},
		{`{"type":"object","title":"a` + "\U000E0041" + `"}`, "/title contains U+E0041 TAG LATIN CAPITAL LETTER A"},
		{`{"type":"object","properties":{"q":{"type":"string","pattern":"^a` + "\u2060" + `$"}}}`, "the schema line 1: the text contains U+2060 WORD JOINER"},
		{`{"type":"object","properties":{"q":{"type":"string","default":"\ufeff"}}}`, "/properties/q/default contains U+FEFF ZERO WIDTH NO-BREAK SPACE"},
		{`{"type":"object","properties":{"q":{"type":"string","description":"x` + "\U000E0100" + `"}}}`, "U+E0100 VARIATION SELECTOR-17"},
	}
	for _, tt := range refused {
		_, err := CompileSchema(json.RawMessage(tt.schema))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CompileSchema(%q) = %v, want an error containing %q", tt.schema, err, tt.want)
		}
	}
}
