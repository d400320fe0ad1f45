package plugin

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/toolhost/toolhost/internal/clip"
)

var (
	pluginNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)
	toolNameRE   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]{0,63}$`)
	exportRE     = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.-]{0,127}$`)
	wasmFileRE   = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127}\.wasm$`)
	globRE       = regexp.MustCompile(`^[a-zA-Z0-9_*?-]{1,64}$`)
	hostRE       = regexp.MustCompile(`^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidManifest}, args...)...)
}

func (m *Manifest) validate() error {
	if !pluginNameRE.MatchString(m.Name) {
		return invalid("name %q must match %s (lowercase letter, then up to 63 of a-z 0-9 _ -)", truncate(m.Name), pluginNameRE)
	}
	if _, err := ParseVersion(m.Version); err != nil {
		return invalid("version: %v", err)
	}
	if err := checkText("description", m.Description); err != nil {
		return err
	}
	if !wasmFileRE.MatchString(m.Wasm) {
		return invalid("wasm %q must be a plain file name ending in .wasm, next to plugin.json", truncate(m.Wasm))
	}
	if m.Icon != "" {
		if _, _, err := ParseIcon(m.Icon); err != nil {
			return invalid("icon %s", err)
		}
	}
	if len(m.Tools) == 0 {
		return invalid("tools: a plugin must define at least one tool")
	}
	if len(m.Tools) > MaxTools {
		return invalid("tools: %d tools, the limit is %d", len(m.Tools), MaxTools)
	}
	seen := map[string]bool{}
	for i := range m.Tools {
		t := &m.Tools[i]
		if !toolNameRE.MatchString(t.Name) {
			return invalid("tools[%d].name %q must match %s", i, truncate(t.Name), toolNameRE)
		}
		if seen[strings.ToLower(t.Name)] {
			return invalid("tools[%d].name %q is defined twice (tool names are compared case-insensitively)", i, t.Name)
		}
		seen[strings.ToLower(t.Name)] = true
		if err := checkText(fmt.Sprintf("tools[%d].description", i), t.Description); err != nil {
			return err
		}
		if t.Description == "" {
			return invalid("tools[%d] (%s): description is required: it is what the model reads", i, t.Name)
		}
		if t.Export == "" {
			t.Export = t.Name
		}
		if !exportRE.MatchString(t.Export) {
			return invalid("tools[%d].export %q is not a valid export name", i, truncate(t.Export))
		}
		if _, err := CompileSchema(t.Parameters); err != nil {
			return invalid("tools[%d] (%s).parameters: %v", i, t.Name, err)
		}
		if err := checkMCPHeaders(t.Parameters); err != nil {
			return invalid("tools[%d] (%s).parameters: %v", i, t.Name, err)
		}
		if t.OutputSchema != nil {
			if _, err := CompileSchema(t.OutputSchema); err != nil {
				return invalid("tools[%d] (%s).output_schema: %v", i, t.Name, err)
			}
		}
		if t.Annotations != nil {
			if err := checkText(fmt.Sprintf("tools[%d].annotations.title", i), t.Annotations.Title); err != nil {
				return err
			}
			if len(t.Annotations.Title) > 256 {
				return invalid("tools[%d].annotations.title is %d bytes, the limit is 256", i, len(t.Annotations.Title))
			}
			if t.Annotations.ReadOnly && t.Annotations.Destructive {
				return invalid("tools[%d] (%s).annotations: read_only and destructive contradict each other; set one", i, t.Name)
			}
		}
	}
	if err := m.validateHooks(); err != nil {
		return err
	}
	if err := m.validateLimitsAndPermissions(); err != nil {
		return err
	}
	return m.validateConfigAndSecrets()
}

func (m *Manifest) validateLimitsAndPermissions() error {
	l := m.Limits
	switch {
	case l.MemoryPages != 0 && l.MemoryPages < MinMemoryPages:
		return invalid("limits.memory_pages %d is below %d: the Extism runtime alone needs 16 pages (1 MiB)", l.MemoryPages, MinMemoryPages)
	case l.MemoryPages > MaxMemoryPages:
		return invalid("limits.memory_pages %d is above the ceiling of %d (256 MiB)", l.MemoryPages, MaxMemoryPages)
	case l.TimeoutMS > MaxTimeoutMS:
		return invalid("limits.timeout_ms %d is above the ceiling of %d", l.TimeoutMS, MaxTimeoutMS)
	case l.MaxOutputBytes > MaxOutputBytes:
		return invalid("limits.max_output_bytes %d is above the ceiling of %d", l.MaxOutputBytes, MaxOutputBytes)
	}
	p := m.Permissions
	if len(p.AllowedHosts) > MaxAllowedHosts {
		return invalid("permissions.allowed_hosts: %d entries, the limit is %d", len(p.AllowedHosts), MaxAllowedHosts)
	}
	for _, h := range p.AllowedHosts {
		if !hostRE.MatchString(h) || looksNumeric(h) {
			return invalid("permissions.allowed_hosts: %q is not a lowercase host name (optionally \"*.\" + domain); IP addresses and ports are not accepted", truncate(h))
		}
		if rest, wild := strings.CutPrefix(h, "*."); wild && !strings.Contains(rest, ".") {
			return invalid("permissions.allowed_hosts: %q would cover a whole top-level domain; name a registrable domain such as *.example.com", h)
		}
	}
	if len(p.AllowedPaths) > MaxAllowedPaths {
		return invalid("permissions.allowed_paths: %d entries, the limit is %d", len(p.AllowedPaths), MaxAllowedPaths)
	}
	// In sorted order, so the message names the same pair every time.
	hostFor := make(map[string]string, len(p.AllowedPaths))
	for _, hostPath := range sortedKeys(p.AllowedPaths) {
		guestPath := p.AllowedPaths[hostPath]
		for _, s := range []string{hostPath, guestPath} {
			if !path.IsAbs(s) || path.Clean(s) != s || strings.ContainsRune(s, 0) {
				return invalid("permissions.allowed_paths: %q must be an absolute, clean path (no .., no trailing /)", truncate(s))
			}
		}
		if hostPath == "/" {
			return invalid("permissions.allowed_paths: granting the whole file system is not allowed")
		}
		// The sandbox mounts one directory per guest path: a second
		// host directory there would hide the first, while install and
		// inspect would show both grants.
		if other, dup := hostFor[guestPath]; dup {
			return invalid("permissions.allowed_paths: %q and %q are both mapped to guest path %q; the plugin would see only one of them — give each host directory its own guest path (e.g. %q)",
				truncate(other), truncate(hostPath), truncate(guestPath), path.Join(guestPath, path.Base(hostPath)))
		}
		hostFor[guestPath] = hostPath
	}
	return nil
}

// looksNumeric reports whether a host name would be read as an IPv4 address
// (1.2.3.4, 127.1, 2130706433, 0x7f.1): URL parsers treat a host whose last
// label starts with a digit as a number. No top-level domain starts with one.
func looksNumeric(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	return last != "" && last[0] >= '0' && last[0] <= '9'
}

func checkText(field, s string) error {
	if len(s) > MaxDescriptionLen {
		return invalid("%s is %d bytes, the limit is %d", field, len(s), MaxDescriptionLen)
	}
	if r, off, ok := firstHidden(s); ok {
		return fmt.Errorf("%w: %w", ErrInvalidManifest, hiddenError(field, s, r, off))
	}
	return nil
}

// truncate shortens untrusted text quoted in an error to its first 80
// bytes, cut between UTF-8 characters (a cut inside one would show as
// \xe2… through %q).
func truncate(s string) string {
	if start, _, cut := clip.Middle(s, 80, 0); cut {
		return start + "…"
	}
	return s
}
