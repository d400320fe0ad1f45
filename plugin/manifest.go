package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

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
