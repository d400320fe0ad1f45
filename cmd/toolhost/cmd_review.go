package main

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/engine/sandbox"
	"github.com/toolhost/toolhost/host/engine/wasmcheck"
	"github.com/toolhost/toolhost/plugin"
)

func newReviewCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "review BUNDLE",
		Short: "Show everything a curator must read before signing a bundle",
		Long: `Print the manifest in full (tool descriptions included: that is where tool
poisoning hides), the permissions and limits it asks for, the digest a
signature would cover, and the wasm module's imports and exports checked
against the manifest and against what the sandbox provides. Exits 3 when the
module would be refused.`,
		Example: "  toolhost curator review time.plugin && toolhost curator sign --key alice.key time.plugin",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := readBundle(args[0])
			if err != nil {
				return err
			}
			return review(g.stdout, b)
		},
	}
}

// suspicious are phrases that, in a tool description, address the model
// rather than describe the tool.
var suspicious = regexp.MustCompile(`(?i)(ignore (all |any )?(previous|prior)|<important>|do not (tell|mention|inform)|system prompt|before using this tool|instead of|exfiltrat|\bsecret\b|api[_ -]?key|password|~/\.ssh|id_rsa)`)

func review(w io.Writer, b *plugin.Bundle) error {
	m := b.Manifest()
	fmt.Fprintf(w, "plugin:   %s %s\ndigest:   %s (what a signature covers)\nwasm:     %d bytes, sha256 %x\n", m.Name, m.Version, b.Digest(), len(b.Wasm), b.WasmSHA256())
	fmt.Fprintf(w, "signed by: %d signature(s) already\n", len(b.Signatures))
	fmt.Fprintf(w, "about:    %s\n\n", visible(m.Description))

	lim := m.Limits.Effective()
	fmt.Fprintf(w, "limits:   memory %d pages (%d MiB), timeout %d ms, output %d bytes\n", lim.MemoryPages, lim.MemoryPages/16, lim.TimeoutMS, lim.MaxOutputBytes)
	fmt.Fprintf(w, "network:  %s\n", orNone(strings.Join(m.Permissions.AllowedHosts, ", ")))
	var paths []string
	for hp, gp := range m.Permissions.AllowedPaths {
		paths = append(paths, hp+" -> "+gp+" (read-only)")
	}
	slices.Sort(paths)
	fmt.Fprintf(w, "files:    %s\n", visible(orNone(strings.Join(paths, ", "))))
	isolation := "a fresh instance for every call"
	if m.ReuseInstances {
		isolation = "instances are REUSED across calls (state can carry from one call to the next)"
	}
	fmt.Fprintf(w, "isolation: %s\n", isolation)
	if m.Icon != "" {
		if mimeType, img, err := plugin.ParseIcon(m.Icon); err == nil {
			fmt.Fprintf(w, "icon:     %s %s, %d bytes (clients show it next to the tools: check it does not impersonate another brand)\n", mimeType, orNone(plugin.IconSize(img)), len(img))
		}
	}
	fmt.Fprintf(w, "%s\n", settingsText(m))

	var warnings []string
	for _, h := range m.Permissions.AllowedHosts {
		if strings.HasPrefix(h, "*.") {
			warnings = append(warnings, fmt.Sprintf("network grant %s covers every subdomain", h))
		}
	}
	for _, t := range m.Tools {
		fmt.Fprintf(w, "tool %s (export %s)\n  description: %s\n  parameters:  %s\n", t.Name, t.Export, visible(t.Description), visible(oneLine(string(t.Parameters))))
		fmt.Fprint(w, toolGovernance(&t))
		if hasNonASCII(t.Description) || hasNonASCII(string(t.Parameters)) {
			warnings = append(warnings, fmt.Sprintf("tool %s: text outside ASCII, shown escaped beside it: check that it reads the same", t.Name))
		}
		if loc := suspicious.FindString(t.Description); loc != "" {
			warnings = append(warnings, fmt.Sprintf("tool %s: description contains %q: read it as an instruction to the model, not a description", t.Name, loc))
		}
		for _, u := range plugin.UnsatisfiableRequired(t.Parameters) {
			warnings = append(warnings, fmt.Sprintf("tool %s: no call can pass its parameter schema: %s", t.Name, visible(u)))
		}
		for _, k := range plugin.RootCombinators(t.Parameters) {
			warnings = append(warnings, fmt.Sprintf("tool %s: %s", t.Name, rootCombinatorNote(k)))
		}
		if len(t.Description) > 1024 {
			warnings = append(warnings, fmt.Sprintf("tool %s: description is %d bytes long; long descriptions can hide instructions", t.Name, len(t.Description)))
		}
	}

	fmt.Fprint(w, hooksText(m))
	exports := m.Exports()
	spec := engine.Spec{Name: m.Name, Wasm: b.Wasm, Limits: lim, Permissions: m.Permissions, Exports: exports}
	mod, _ := wasmcheck.Check(b.Wasm, wasmcheck.Policy{MaxModuleBytes: plugin.MaxWasmBytes, MaxMemoryPages: lim.MemoryPages, MaxTableElements: sandbox.MaxTableElements, AllowedImports: func(string, string) bool { return true }})
	if mod != nil {
		fmt.Fprintf(w, "\nmodule imports (%d):\n", len(mod.Imports))
		for _, imp := range mod.Imports {
			fmt.Fprintf(w, "  %s.%s\n", imp.Module, imp.Name)
		}
		var exported []string
		for _, e := range mod.Exports {
			exported = append(exported, e.Name)
		}
		fmt.Fprintf(w, "module exports: %s\n", strings.Join(exported, ", "))
		for _, e := range exported {
			if !slices.Contains(exports, e) && e != "memory" && !strings.HasPrefix(e, "_") {
				warnings = append(warnings, fmt.Sprintf("export %s is not used by any tool", e))
			}
		}
	}
	if len(warnings) > 0 {
		fmt.Fprintln(w, "\nwarnings:")
		for _, wn := range warnings {
			fmt.Fprintf(w, "  ! %s\n", wn)
		}
	}
	fmt.Fprintf(w, "\nmanifest (exact bytes that will be signed):\n%s\n", strings.TrimRight(string(b.ManifestBytes), "\n"))
	if hasNonASCII(string(b.ManifestBytes)) {
		fmt.Fprintf(w, "\nmanifest with every character outside ASCII escaped:\n%s\n", escapeNonASCII(strings.TrimRight(string(b.ManifestBytes), "\n")))
	}
	if err := sandbox.Prevalidate(spec); err != nil {
		return fmt.Errorf("%w: %v", errModuleRefused, err)
	}
	fmt.Fprintln(w, "\nmodule:   acceptable to the sandbox (imports provided, exports present, sizes within limits)")
	return nil
}

func hasNonASCII(s string) bool {
	for _, r := range s {
		if r > '~' || (r < ' ' && r != '\n' && r != '\t') {
			return true
		}
	}
	return false
}

func escapeNonASCII(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r > '~' || (r < ' ' && r != '\n' && r != '\t') {
			fmt.Fprintf(&b, "\\u{%x}", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// toolGovernance describes a tool's output schema, annotations and approval
// need, one indented line each (nothing for a tool that has none).
func toolGovernance(t *plugin.Tool) string {
	var b strings.Builder
	if len(t.OutputSchema) > 0 {
		fmt.Fprintf(&b, "  output:      %s\n", terminalSafe(oneLine(string(t.OutputSchema))))
	}
	if a := t.Annotations; a != nil {
		var flags []string
		for _, f := range []struct {
			on   bool
			name string
		}{{a.ReadOnly, "read-only"}, {a.Destructive, "DESTRUCTIVE"}, {a.Idempotent, "idempotent"}, {a.OpenWorld, "open-world"}} {
			if f.on {
				flags = append(flags, f.name)
			}
		}
		fmt.Fprintf(&b, "  annotations: title %q; %s\n", a.Title, orNone(strings.Join(flags, ", ")))
	}
	if t.NeedsApproval || t.Destructive() {
		fmt.Fprintf(&b, "  approval:    default policy ask (a person confirms each call)\n")
	}
	return b.String()
}

// hooksText says what a policy plugin's hooks see: every argument and
// result of the tools their globs match, any plugin's.
func hooksText(m *plugin.Manifest) string {
	if len(m.Hooks) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nPOLICY PLUGIN: %d hook(s) see the arguments and results of other plugins' tools:\n", len(m.Hooks))
	for _, h := range m.Hooks {
		fmt.Fprintf(&b, "  %s %s (priority %d) sees tools %s\n", terminalSafe(h.Event), terminalSafe(h.Export), h.Priority, terminalSafe(strings.Join(h.Tools, ", ")))
	}
	return b.String()
}
