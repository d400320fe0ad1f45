package plugin

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseVersion(t *testing.T) {
	valid := []struct {
		in   string
		want Version
	}{
		{"0.0.0", Version{}},
		{"1.2.3", Version{Major: 1, Minor: 2, Patch: 3}},
		{"10.20.30", Version{Major: 10, Minor: 20, Patch: 30}},
		{"1.0.0-alpha", Version{Major: 1, Pre: []string{"alpha"}}},
		{"1.0.0-alpha.1", Version{Major: 1, Pre: []string{"alpha", "1"}}},
		{"1.0.0-0.3.7", Version{Major: 1, Pre: []string{"0", "3", "7"}}},
		{"1.0.0-x.7.z.92", Version{Major: 1, Pre: []string{"x", "7", "z", "92"}}},
		{"1.0.0-x-y-z.--", Version{Major: 1, Pre: []string{"x-y-z", "--"}}},
		{"1.0.0-0a", Version{Major: 1, Pre: []string{"0a"}}},
		{"1.0.0+20130313144700", Version{Major: 1, Build: "20130313144700"}},
		{"1.0.0-beta+exp.sha.5114f85", Version{Major: 1, Pre: []string{"beta"}, Build: "exp.sha.5114f85"}},
		{"1.0.0+0.build.1-rc.10000aaa-kk-0.1", Version{Major: 1, Build: "0.build.1-rc.10000aaa-kk-0.1"}},
		{"1.0.0+001", Version{Major: 1, Build: "001"}}, // leading zeros are fine in build metadata
		{"18446744073709551615.0.0", Version{Major: 1<<64 - 1}},
	}
	for _, tt := range valid {
		got, err := ParseVersion(tt.in)
		if err != nil {
			t.Errorf("ParseVersion(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseVersion(%q) (-want +got):\n%s", tt.in, diff)
		}
		if got.String() != tt.in {
			t.Errorf("String() = %q, want %q", got.String(), tt.in)
		}
	}
	for _, in := range []string{
		"", "1", "1.2", "1.2.3.4", "v1.2.3", "01.2.3", "1.02.3", "1.2.03", "-1.2.3", "1.2.-3",
		"1.2.3-", "1.2.3+", "1.2.3-01", "1.2.3-alpha..1", "1.2.3-alpha_1", "1.2.3+build+2",
		"1.2.3 ", " 1.2.3", "1.2.3\n", "1.2.3-é", "１.2.3", "1.2.3-" + strings.Repeat("a", 59),
		"18446744073709551616.0.0", "0.99999999999999999999.0",
	} {
		if v, err := ParseVersion(in); err == nil {
			t.Errorf("ParseVersion(%q) = %v, want an error", in, v)
		}
	}
}

func TestVersionCompare(t *testing.T) {
	// Each is lower than the next, by semver 2.0.0 §11 (its examples first).
	ordered := []string{
		"0.0.0",
		"0.0.1",
		"0.1.0",
		"1.0.0-0",
		"1.0.0-1",
		"1.0.0-2",
		"1.0.0-10",
		"1.0.0-99999999999999999999",  // beyond uint64, still numeric
		"1.0.0-100000000000000000000", // longer numeric is larger
		"1.0.0--",                     // alphanumeric is above every numeric
		"1.0.0-Alpha",                 // ASCII order: uppercase first
		"1.0.0-alpha",
		"1.0.0-alpha.1",
		"1.0.0-alpha.beta",
		"1.0.0-beta",
		"1.0.0-beta.2",
		"1.0.0-beta.11",
		"1.0.0-rc.1",
		"1.0.0",
		"1.0.1",
		"1.1.0",
		"1.9.0",
		"1.10.0",
		"2.0.0",
		"10.0.0",
		"18446744073709551615.0.0",
	}
	vs := make([]Version, len(ordered))
	for i, s := range ordered {
		v, err := ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		vs[i] = v
	}
	for i := range vs {
		for j := range vs {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := vs[i].Compare(vs[j]); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}

	// Build metadata does not count.
	for _, pair := range [][2]string{{"1.0.0+a", "1.0.0+b"}, {"1.0.0", "1.0.0+z"}, {"1.0.0-rc.1+x", "1.0.0-rc.1"}} {
		a, _ := ParseVersion(pair[0])
		b, _ := ParseVersion(pair[1])
		if a.Compare(b) != 0 || b.Compare(a) != 0 {
			t.Errorf("Compare(%s, %s) != 0", pair[0], pair[1])
		}
	}
}
