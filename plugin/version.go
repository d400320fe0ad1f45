package plugin

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Version is a semantic version (semver 2.0.0). Build metadata is kept but
// ignored in comparisons.
type Version struct {
	Major, Minor, Patch uint64
	Pre                 []string
	Build               string
}

var semverRE = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// ParseVersion parses a semantic version such as 1.2.3 or 1.0.0-rc.1.
func ParseVersion(s string) (Version, error) {
	m := semverRE.FindStringSubmatch(s)
	if m == nil || len(s) > 64 {
		return Version{}, fmt.Errorf("%q is not a semantic version such as 1.2.3", truncate(s))
	}
	var v Version
	var err error
	for i, p := range []*uint64{&v.Major, &v.Minor, &v.Patch} {
		if *p, err = strconv.ParseUint(m[i+1], 10, 64); err != nil {
			return Version{}, fmt.Errorf("%q: number too large", truncate(s))
		}
	}
	if m[4] != "" {
		v.Pre = strings.Split(m[4], ".")
	}
	v.Build = m[5]
	return v, nil
}

// Compare returns -1, 0 or +1 by semver precedence.
func (v Version) Compare(o Version) int {
	for _, d := range [][2]uint64{{v.Major, o.Major}, {v.Minor, o.Minor}, {v.Patch, o.Patch}} {
		if d[0] != d[1] {
			return cmpU(d[0], d[1])
		}
	}
	switch {
	case len(v.Pre) == 0 && len(o.Pre) == 0:
		return 0
	case len(v.Pre) == 0:
		return 1
	case len(o.Pre) == 0:
		return -1
	}
	for i := 0; i < len(v.Pre) && i < len(o.Pre); i++ {
		a, b := v.Pre[i], o.Pre[i]
		// Numeric identifiers have no leading zeros (ParseVersion checks),
		// so the longer one is larger; this holds beyond 64 bits too.
		an, bn := isNumeric(a), isNumeric(b)
		switch {
		case an && bn:
			if len(a) != len(b) {
				return cmpU(uint64(len(a)), uint64(len(b)))
			}
			if c := strings.Compare(a, b); c != 0 {
				return c
			}
		case an:
			return -1
		case bn:
			return 1
		default:
			if c := strings.Compare(a, b); c != 0 {
				return c
			}
		}
	}
	return cmpU(uint64(len(v.Pre)), uint64(len(o.Pre)))
}

func isNumeric(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if len(v.Pre) > 0 {
		s += "-" + strings.Join(v.Pre, ".")
	}
	if v.Build != "" {
		s += "+" + v.Build
	}
	return s
}
