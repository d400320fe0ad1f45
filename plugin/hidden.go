package plugin

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/runenames"
)

// hiddenRune reports code points that render as nothing or change how the
// text around them renders, so a reviewer and a model could read different
// text: control characters (C0, DEL and C1) except newline and tab; every
// format character (Cf: zero-width space, joiners and non-joiners, word
// joiner, BOM, soft hyphen, the bidi controls, the invisible tag
// characters); the other default-ignorable code points (Hangul fillers,
// combining grapheme joiner, …); variation selectors (FE00–FE0F,
// E0100–E01EF, and the Mongolian ones); and the line and paragraph
// separators. Together these cover Unicode's Default_Ignorable_Code_Point.
func hiddenRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case unicode.IsControl(r),
		unicode.Is(unicode.Cf, r),
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r),
		unicode.Is(unicode.Variation_Selector, r),
		unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r):
		return true
	case r >= 0xe0000 && r <= 0xe0fff: // tags and the rest of the ignorable plane-14 block
		return true
	}
	return false
}

// describeRune names a code point for an error message: U+200B ZERO WIDTH SPACE.
func describeRune(r rune) string {
	if name := runenames.Name(r); name != "" && name[0] != '<' {
		return fmt.Sprintf("%U %s", r, name)
	}
	return fmt.Sprintf("%U", r)
}

// firstHidden returns the first hidden code point in s and its byte offset.
func firstHidden(s string) (rune, int, bool) {
	for i, r := range s {
		if hiddenRune(r) {
			return r, i, true
		}
	}
	return 0, 0, false
}

// hiddenError says which code point was found, where, and why it matters.
func hiddenError(where string, s string, r rune, off int) error {
	return fmt.Errorf("%s contains %s at character %d, which renders as nothing or changes how the text renders, so a reviewer could read something else than the model; remove it (a schema pattern or const that needs it may write it as a \\u escape)",
		where, describeRune(r), utf8.RuneCountInString(s[:off])+1)
}

// checkRawHidden refuses a hidden code point written literally anywhere in
// JSON text: escapes (\u200b) are visible in the signed bytes and are judged
// per field once decoded.
func checkRawHidden(where string, data []byte) error {
	s := string(data)
	if r, off, ok := firstHidden(s); ok {
		line := 1
		for _, b := range data[:off] {
			if b == '\n' {
				line++
			}
		}
		return fmt.Errorf("%s line %d: %w", where, line, hiddenError("the text", s, r, off))
	}
	return nil
}

// escapeHidden writes every hidden code point of s as \u{...}, so an error
// message that quotes s shows where it is.
func escapeHidden(s string) string {
	if _, _, ok := firstHidden(s); !ok {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if hiddenRune(r) {
			fmt.Fprintf(&b, "\\u{%x}", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}
