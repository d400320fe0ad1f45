package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/internal/strictjson"
)

// ErrInvalidManifest is wrapped by every manifest parsing or validation error.
var ErrInvalidManifest = errors.New("invalid plugin manifest")

// Ceilings no manifest may exceed, whatever a curator signed. The host may
// clamp further, never widen.
const (
	MaxManifestBytes   = 256 << 10
	MaxParameterBytes  = 64 << 10
	MaxTools           = 64
	MaxMemoryPages     = 4096 // 256 MiB
	MinMemoryPages     = 16   // the Extism kernel's own memory
	MaxTimeoutMS       = 60_000
	MaxOutputBytes     = 16 << 20
	MaxDescriptionLen  = 4096
	MaxAllowedHosts    = 64
	MaxAllowedPaths    = 16
	MaxHooks           = 16
	MaxHookGlobs       = 64
	MaxHookPriority    = 1_000_000
	DefaultMemoryPages = 256 // 16 MiB
	DefaultTimeoutMS   = 1000
	DefaultOutputBytes = 1 << 20
)

// Manifest is the parsed form of plugin.json.
type Manifest struct {
	Name        string      `json:"name"`
	Version     string      `json:"version"`
	Description string      `json:"description"`
	Wasm        string      `json:"wasm"`
	Tools       []Tool      `json:"tools"`
	Limits      Limits      `json:"limits"`
	Permissions Permissions `json:"permissions"`
	// ReuseInstances lets the host run several calls, one after another,
	// in the same wasm instance, so state left by one call (memory,
	// globals) is visible to the next. It trades isolation between calls
	// for speed (a Go guest's runtime starts once instead of per call), so
	// it is off unless the signed manifest asks for it.
	ReuseInstances bool `json:"reuse_instances,omitempty"`
	// Hooks make the plugin a policy plugin: its exports are called around
	// other plugins' tool calls (see Hook).
	Hooks []Hook `json:"hooks,omitempty"`
	// Config is the JSON Schema (root "type": "object") of the
	// configuration the operator sets (`toolhost plugin config`); the
	// plugin reads the values, as strings, with the PDK's config functions.
	Config json.RawMessage `json:"config,omitempty"`
	// Secrets are the secrets the plugin uses, by name, and where they may
	// be sent (see SecretBinding). Their values never enter the sandbox.
	Secrets map[string]SecretBinding `json:"secrets,omitempty"`
	// Icon is the plugin's icon, a data: URI of a small PNG, JPEG or WebP
	// image (see ParseIcon), shown by clients next to its tools. Signed
	// with the manifest like everything in it.
	Icon string `json:"icon,omitempty"`
}

// Tool is one tool definition.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Export is the wasm function that runs the tool; it defaults to Name.
	Export string `json:"export,omitempty"`
	// Parameters is the JSON Schema of the arguments, exactly as signed.
	Parameters json.RawMessage `json:"parameters"`
	// OutputSchema, when set, is the JSON Schema (root "type": "object")
	// every result must satisfy; a result that does not is a plugin_error.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Annotations describe the tool's behaviour to clients (MCP tool
	// annotations). They are hints to a client, but destructive also makes
	// the default approval policy "ask".
	Annotations *Annotations `json:"annotations,omitempty"`
	// NeedsApproval makes the default approval policy of the tool "ask".
	NeedsApproval bool `json:"needs_approval,omitempty"`
}

// Annotations are the MCP tool annotations, in the manifest's snake_case.
type Annotations struct {
	Title       string `json:"title,omitempty"`
	ReadOnly    bool   `json:"read_only,omitempty"`
	Destructive bool   `json:"destructive,omitempty"`
	Idempotent  bool   `json:"idempotent,omitempty"`
	OpenWorld   bool   `json:"open_world,omitempty"`
}

// Destructive reports whether the tool is annotated destructive.
func (t *Tool) Destructive() bool { return t.Annotations != nil && t.Annotations.Destructive }

// Hook events.
const (
	HookBeforeCall = "before_call"
	HookAfterCall  = "after_call"
)

// Hook is one export of a policy plugin that the host calls around the
// calls of the tools its globs match. before_call gets
// {"tool","plugin","arguments","entry"} and answers {"action":"allow"},
// {"action":"deny","reason":…} or {"action":"rewrite","arguments":{…}};
// after_call gets {"tool","plugin","arguments","result"} and answers
// {"result":…} or a deny. Hooks run in ascending Priority, ties by plugin
// name.
type Hook struct {
	Event  string `json:"event"`
	Export string `json:"export"`
	// Tools are globs (path.Match syntax: * and ?) over tool names.
	Tools    []string `json:"tools"`
	Priority int      `json:"priority,omitempty"`
}

// Sees reports whether the hook is called for the tool named tool.
func (h *Hook) Sees(tool string) bool {
	for _, g := range h.Tools {
		if MatchGlob(g, tool) {
			return true
		}
	}
	return false
}

// MatchGlob reports whether a tool-name glob (* and ? wildcards) matches
// name. A malformed glob matches nothing.
func MatchGlob(glob, name string) bool {
	ok, err := path.Match(glob, name)
	return err == nil && ok
}

// ValidGlob checks a tool-name glob: tool-name characters plus * and ?.
func ValidGlob(glob string) error {
	if !globRE.MatchString(glob) {
		return fmt.Errorf("%q is not a tool-name glob: use up to 64 of a-z A-Z 0-9 _ - and the wildcards * and ?", truncate(glob))
	}
	return nil
}

// Limits bound every call of the plugin's tools. Zero means the default.
type Limits struct {
	MemoryPages    uint32 `json:"memory_pages,omitempty"`
	TimeoutMS      uint32 `json:"timeout_ms,omitempty"`
	MaxOutputBytes uint32 `json:"max_output_bytes,omitempty"`
}

// Permissions are the capabilities the plugin asks for. Nothing else is
// granted.
type Permissions struct {
	// AllowedHosts are host names the plugin may fetch from over HTTP(S);
	// "*.example.com" matches subdomains of example.com.
	AllowedHosts []string `json:"allowed_hosts,omitempty"`
	// AllowedPaths maps a host directory to the guest path where it is
	// visible, read-only.
	AllowedPaths map[string]string `json:"allowed_paths,omitempty"`
}

var manifestShape = strictjson.Object{
	"name":        strictjson.Any{},
	"version":     strictjson.Any{},
	"description": strictjson.Any{},
	"wasm":        strictjson.Any{},
	"tools": strictjson.ArrayOf{Elem: strictjson.Object{
		"name":        strictjson.Any{},
		"description": strictjson.Any{},
		"export":      strictjson.Any{},
		"parameters":  strictjson.Any{},
		// output_schema is a schema: Any still refuses duplicate keys.
		"output_schema": strictjson.Any{},
		"annotations": strictjson.Object{
			"title":       strictjson.Any{},
			"read_only":   strictjson.Any{},
			"destructive": strictjson.Any{},
			"idempotent":  strictjson.Any{},
			"open_world":  strictjson.Any{},
		},
		"needs_approval": strictjson.Any{},
	}},
	"hooks": strictjson.ArrayOf{Elem: strictjson.Object{
		"event":    strictjson.Any{},
		"export":   strictjson.Any{},
		"tools":    strictjson.ArrayOf{Elem: strictjson.Any{}},
		"priority": strictjson.Any{},
	}},
	"limits": strictjson.Object{
		"memory_pages":     strictjson.Any{},
		"timeout_ms":       strictjson.Any{},
		"max_output_bytes": strictjson.Any{},
	},
	"reuse_instances": strictjson.Any{},
	"icon":            strictjson.Any{},
	"config":          strictjson.Any{},
	"secrets": strictjson.MapOf{Elem: strictjson.Object{
		"hosts":  strictjson.ArrayOf{Elem: strictjson.Any{}},
		"header": strictjson.Any{},
		"prefix": strictjson.Any{},
	}},
	"permissions": strictjson.Object{
		"allowed_hosts": strictjson.ArrayOf{Elem: strictjson.Any{}},
		"allowed_paths": strictjson.Any{},
	},
}

// ParseManifest parses and validates the exact bytes of a plugin.json.
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalidManifest, len(data), MaxManifestBytes)
	}
	var m Manifest
	if err := strictjson.Decode(data, manifestShape, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	// Decoded fields were checked above; a literal hidden code point left
	// anywhere (a pattern, a const, a key name) is refused here.
	if err := checkRawHidden("plugin.json", data); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidManifest, err)
	}
	return &m, nil
}

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

func (m *Manifest) validateHooks() error {
	if len(m.Hooks) > MaxHooks {
		return invalid("hooks: %d hooks, the limit is %d", len(m.Hooks), MaxHooks)
	}
	seen := map[[2]string]bool{}
	for i := range m.Hooks {
		h := &m.Hooks[i]
		if h.Event != HookBeforeCall && h.Event != HookAfterCall {
			return invalid("hooks[%d].event %q: use %q or %q", i, truncate(h.Event), HookBeforeCall, HookAfterCall)
		}
		if !exportRE.MatchString(h.Export) {
			return invalid("hooks[%d].export %q is not a valid export name", i, truncate(h.Export))
		}
		key := [2]string{h.Event, h.Export}
		if seen[key] {
			return invalid("hooks[%d]: %s hook %s is declared twice", i, h.Event, h.Export)
		}
		seen[key] = true
		if len(h.Tools) == 0 {
			return invalid(`hooks[%d].tools: name the tools the hook sees (globs, e.g. ["*"] for all)`, i)
		}
		if len(h.Tools) > MaxHookGlobs {
			return invalid("hooks[%d].tools: %d globs, the limit is %d", i, len(h.Tools), MaxHookGlobs)
		}
		for _, g := range h.Tools {
			if err := ValidGlob(g); err != nil {
				return invalid("hooks[%d].tools: %v", i, err)
			}
		}
		if h.Priority < -MaxHookPriority || h.Priority > MaxHookPriority {
			return invalid("hooks[%d].priority %d is outside ±%d", i, h.Priority, MaxHookPriority)
		}
	}
	return nil
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

// Effective returns the limits with defaults filled in.
func (l Limits) Effective() Limits {
	if l.MemoryPages == 0 {
		l.MemoryPages = DefaultMemoryPages
	}
	if l.TimeoutMS == 0 {
		l.TimeoutMS = DefaultTimeoutMS
	}
	if l.MaxOutputBytes == 0 {
		l.MaxOutputBytes = DefaultOutputBytes
	}
	return l
}

// Exports lists the wasm exports the manifest calls: every tool's and
// every hook's, each once, in manifest order.
func (m *Manifest) Exports() []string {
	var out []string
	add := func(e string) {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	for _, t := range m.Tools {
		add(t.Export)
	}
	for _, h := range m.Hooks {
		add(h.Export)
	}
	return out
}

// Tool returns the tool with the given name.
func (m *Manifest) Tool(name string) (*Tool, bool) {
	for i := range m.Tools {
		if m.Tools[i].Name == name {
			return &m.Tools[i], true
		}
	}
	return nil, false
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

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
