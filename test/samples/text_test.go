// Package samples tests sample plugins written in languages other than Go
// through a real host: sample-plugins/text (AssemblyScript, @extism/as-pdk).
package samples

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/engine/sandbox"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/internal/testplugins"
	"github.com/toolhost/toolhost/store"
)

// textHost installs the text sample into a host running the in-process
// sandbox (the engine each worker process runs).
func textHost(tb testing.TB) *host.Host {
	tb.Helper()
	st, err := store.Open(tb.TempDir(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	e, err := sandbox.NewInProcess(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close(context.Background()) })
	h, err := host.New(host.Options{Store: st, Engine: e, AllowUnsigned: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(h.Close)
	if _, err := h.Install(context.Background(), testplugins.Bundle(tb, "text"), host.InstallOptions{}); err != nil {
		tb.Fatal(err)
	}
	return h
}

func call(tb testing.TB, h *host.Host, tool, args string) string {
	tb.Helper()
	out, err := h.Call(context.Background(), tool, []byte(args))
	if err != nil {
		tb.Fatalf("%s %s: %v", tool, args, err)
	}
	return string(out)
}

func TestTextTools(t *testing.T) {
	h := textHost(t)
	for _, c := range []struct{ tool, args, want string }{
		{"word_count", `{"text":""}`, `{"words":0,"characters":0,"lines":0,"bytes":0}`},
		{"word_count", `{"text":"Hello  wörld\nsecond line 😀"}`, `{"words":5,"characters":26,"lines":2,"bytes":30}`},
		// Escapes, a surrogate pair written as two escapes, spaces around
		// the JSON tokens.
		{"word_count", ` { "text" : "a\tb\u00a0c\"d\\e \ud83d\ude00" } `, `{"words":4,"characters":11,"lines":1,"bytes":15}`},
		{"change_case", `{"to":"upper","text":"héllo wORLD 😀"}`, `{"text":"HÉLLO WORLD 😀"}`},
		{"change_case", `{"text":"HÉLLO wORLD","to":"lower"}`, `{"text":"héllo world"}`},
		{"change_case", `{"text":"  the QUICK\tbrown fox ","to":"title"}`, `{"text":"  The Quick\tBrown Fox "}`},
		// Control characters and quotes come back escaped.
		{"change_case", `{"text":"a\"b\\c\u0001\n","to":"upper"}`, `{"text":"A\"B\\C\u0001\n"}`},
		{"slugify", `{"text":"  Crème Brûlée: the Ærøskøbing way! 2026 "}`, `{"slug":"creme-brulee-the-aeroskobing-way-2026"}`},
		{"slugify", `{"text":"😀 Hello, World"}`, `{"slug":"hello-world"}`},
		{"slugify", `{"text":"!!!"}`, `{"slug":""}`},
	} {
		if got := call(t, h, c.tool, c.args); got != c.want {
			t.Errorf("%s %s = %s, want %s", c.tool, c.args, got, c.want)
		}
	}
}

// Every text the schema admits (maxLength 100,000) runs within the
// plugin's signed memory limit, in its costliest forms: escaped in the
// arguments, many words, characters the result must escape again. (The
// largest take ~0.5 s under -race on a loaded machine, reading 1 MiB of
// input through the kernel; the signed timeout is 10 s.)
func TestTextToolsAtSchemaMaximum(t *testing.T) {
	h := textHost(t)
	const n = 100_000
	for _, c := range []struct{ name, tool, text, to string }{
		{"é", "word_count", strings.Repeat("é", n), ""},
		{"escaped é", "word_count", strings.Repeat(`\u00e9`, n), ""},
		{"newlines", "word_count", strings.Repeat(`\n`, n), ""},
		{"title of many words", "change_case", strings.Repeat("a ", n/2), "title"},
		{"upper of escaped controls", "change_case", strings.Repeat(`\u0001`, n), "upper"},
		{"title of é", "change_case", strings.Repeat("é", n), "title"},
		{"upper of escaped surrogate pairs", "change_case", strings.Repeat(`\ud83d\ude00`, 87_000), "upper"}, // 1 MiB of arguments, the host's bound
		{"slug", "slugify", strings.Repeat("é ", 5_000), ""},
	} {
		args := `{"text":"` + c.text + `"`
		if c.to != "" {
			args += `,"to":"` + c.to + `"`
		}
		out, err := h.Call(context.Background(), c.tool, []byte(args+"}"))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var in, text struct{ Text string }
		json.Unmarshal([]byte(args+"}"), &in)
		if want := utf8.RuneCountInString(in.Text); c.tool == "change_case" && (json.Unmarshal(out, &text) != nil || utf8.RuneCountInString(text.Text) != want) {
			t.Errorf("%s: %d characters back, want %d", c.name, utf8.RuneCountInString(text.Text), want)
		}
	}
}

func TestTextToolsRefuse(t *testing.T) {
	h := textHost(t)
	// The host checks the schema before the guest runs.
	_, err := h.Call(context.Background(), "change_case", []byte(`{"text":"x","to":"sideways"}`))
	if toolerr.CodeOf(err) != toolerr.CodeInvalidArguments {
		t.Errorf("change_case to sideways: %v, want invalid_arguments", err)
	}
}

// wordCount is word_count written in Go: the reference the guest must
// agree with.
func wordCount(s string) string {
	lines := 0
	if s != "" {
		lines = 1 + strings.Count(s, "\n")
	}
	out, _ := json.Marshal(map[string]int{"words": len(strings.Fields(s)), "characters": utf8.RuneCountInString(s), "lines": lines, "bytes": len(s)})
	return string(out)
}

// FuzzWordCount checks the guest's JSON string decoding and counting
// against Go's on any text the host accepts.
func FuzzWordCount(f *testing.F) {
	for _, s := range []string{"", "a b", "a\u2028b\u0085c", "<&>\"\\/", "\x00\x1f", "😀 é\n\n", "\xff\xfe"} {
		f.Add(s)
	}
	h := textHost(f)
	f.Fuzz(func(t *testing.T, s string) {
		args, _ := json.Marshal(map[string]string{"text": s})
		var decoded struct{ Text string }
		json.Unmarshal(args, &decoded) // invalid UTF-8 became U+FFFD
		got := call(t, h, "word_count", string(args))
		var gotMap, wantMap map[string]int
		json.Unmarshal([]byte(got), &gotMap)
		json.Unmarshal([]byte(wordCount(decoded.Text)), &wantMap)
		for k, v := range wantMap {
			if gotMap[k] != v {
				t.Fatalf("word_count %s = %s, want %s", args, got, wordCount(decoded.Text))
			}
		}
	})
}
