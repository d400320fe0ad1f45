package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMiddle(t *testing.T) {
	if start, end, cut := Middle("short", 3, 2); start != "short" || end != "" || cut {
		t.Errorf("Middle(short, 3, 2) = %q, %q, %v", start, end, cut)
	}
	for _, s := range []string{strings.Repeat("k", 1000), strings.Repeat("é", 500), strings.Repeat("日本", 300) + "x", strings.Repeat("🙂", 100)} {
		start, end, cut := Middle(s, 40, 20)
		if !cut || len(start) > 40 || len(end) > 20 || start == "" || end == "" {
			t.Errorf("Middle(%.12q…) = %q, %q, %v", s, start, end, cut)
		}
		if !utf8.ValidString(start) || !utf8.ValidString(end) || !strings.HasPrefix(s, start) || !strings.HasSuffix(s, end) {
			t.Errorf("Middle(%.12q…) = %q, %q: not whole characters of the start and the end", s, start, end)
		}
	}
}
