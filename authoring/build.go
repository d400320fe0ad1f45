package authoring

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/engine/sandbox"
	"github.com/toolhost/toolhost/internal/userfile"
	"github.com/toolhost/toolhost/plugin"
)

// Errors of Build, grouped so callers can map them to exit codes.
var (
	// ErrToolchain means the language's toolchain is missing; the message
	// says how to install it.
	ErrToolchain = errors.New("authoring: toolchain missing")
	// ErrCompile means the toolchain ran and failed; the message holds its
	// output.
	ErrCompile = errors.New("authoring: compile failed")
	// ErrModule means the module would be refused at install.
	ErrModule = errors.New("authoring: the sandbox would refuse this module")
)

// BuildResult is what Build made.
type BuildResult struct {
	Lang     string
	Bundle   *plugin.Bundle
	Output   string // the bundle file written
	Duration time.Duration
	// Installed, when set, says which dependencies the build installed
	// first (an AssemblyScript plugin without node_modules) and how.
	Installed string
}

// DetectLang says which language the plugin in dir is written in.
func DetectLang(dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, "plugin.json")); err != nil {
		return "", fmt.Errorf("authoring: %s has no plugin.json (make a plugin with `toolhost plugin init NAME`): %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
		return LangGo, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err == nil {
		return LangAssemblyScript, nil
	}
	return "", fmt.Errorf("authoring: %s has neither go.mod (Go) nor package.json (AssemblyScript); build the wasm yourself and use `toolhost plugin pack`", dir)
}

// Build compiles the plugin in dir to the wasm file its manifest names,
// checks the module as install would, and writes the unsigned bundle to
// out (default DIR/NAME.plugin). An out that would overwrite the
// plugin's sources is refused (plugin.CheckPackOutput).
func Build(ctx context.Context, dir, out string) (BuildResult, error) {
	start := time.Now()
	lang, err := DetectLang(dir)
	if err != nil {
		return BuildResult{}, err
	}
	res := BuildResult{Lang: lang}
	m, err := readManifest(dir)
	if err != nil {
		return res, err
	}
	if out == "" {
		out = filepath.Join(dir, m.Name+".plugin")
	}
	// Before compiling: -o must not name the manifest or the module.
	if err := plugin.CheckPackOutput(dir, m, out); err != nil {
		return res, err
	}
	switch lang {
	case LangGo:
		err = buildGo(ctx, dir, m.Wasm)
	case LangAssemblyScript:
		res.Installed, err = buildAssemblyScript(ctx, dir, m.Wasm)
	}
	if err != nil {
		return res, err
	}
	b, err := plugin.PackDir(dir)
	if err != nil {
		return res, err
	}
	if err := Check(b); err != nil {
		return res, err
	}
	if err := plugin.CheckPackOutput(dir, b.Manifest(), out); err != nil {
		return res, err // the build may have made the module out names
	}
	if err := userfile.Replace(out, b.Bytes()); err != nil {
		return res, err
	}
	res.Bundle, res.Output, res.Duration = b, out, time.Since(start)
	return res, nil
}

// Check runs the sandbox's pre-validation on a bundle, as install does
// before compiling: imports the host provides, memory and tables within
// limits, every tool's export present.
func Check(b *plugin.Bundle) error {
	m := b.Manifest()
	exports := make([]string, len(m.Tools))
	for i, t := range m.Tools {
		exports[i] = t.Export
	}
	spec := engine.Spec{Name: m.Name, Wasm: b.Wasm, Limits: m.Limits.Effective(), Permissions: m.Permissions, Exports: exports}
	if err := sandbox.Prevalidate(spec); err != nil {
		return fmt.Errorf("%w: %v", ErrModule, err)
	}
	return nil
}

func readManifest(dir string) (*plugin.Manifest, error) {
	// As pack reads it: a named pipe there must not hang the build.
	data, err := userfile.ReadIn(dir, "plugin.json", plugin.MaxManifestBytes)
	if err != nil {
		return nil, fmt.Errorf("authoring: %w: the plugin directory must hold plugin.json itself", err)
	}
	m, err := plugin.ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "plugin.json"), err)
	}
	return m, nil
}

func buildGo(ctx context.Context, dir, wasm string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("%w: the go command is not on PATH; install Go 1.24 or newer (https://go.dev/dl) — Go plugins build with GOOS=wasip1 GOARCH=wasm", ErrToolchain)
	}
	cmd := exec.CommandContext(ctx, gobin, "build", "-trimpath", "-buildmode=c-shared", "-o", wasm, ".")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	return runTool(cmd, dir, "GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "+wasm+" .")
}

func buildAssemblyScript(ctx context.Context, dir, wasm string) (installed string, err error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("%w: node is not on PATH; install Node.js 18 or newer with npm (https://nodejs.org, or apt-get install nodejs npm)", ErrToolchain)
	}
	if installed, err = installNodeModules(ctx, dir); err != nil {
		return "", err
	}
	npx, err := exec.LookPath("npx")
	if err != nil {
		return installed, fmt.Errorf("%w: npx is not on PATH; install npm (it comes with Node.js)", ErrToolchain)
	}
	args := []string{"--no-install", "asc", "assembly/index.ts", "--outFile", wasm, "--use", "abort=assembly/index/abort", "--optimize"}
	cmd := exec.CommandContext(ctx, npx, args...)
	return installed, runTool(cmd, dir, "npx "+strings.Join(args, " "))
}

// installNodeModules installs package.json's dependencies when the
// compiler or the PDK is missing from DIR/node_modules, as go build fetches
// a Go plugin's modules: a directory fresh from `plugin init` (or a clone,
// node_modules being git-ignored) builds without a step of its own. It runs
// `npm ci` when a package-lock.json pins the versions, else `npm install`,
// without install scripts (neither the compiler nor the PDK needs one).
func installNodeModules(ctx context.Context, dir string) (string, error) {
	asc := filepath.Join(dir, "node_modules", ".bin", "asc")
	pdk := filepath.Join(dir, "node_modules", "@extism", "as-pdk")
	if _, err := os.Stat(asc); err == nil {
		if _, err := os.Stat(pdk); err == nil {
			return "", nil
		}
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("%w: the AssemblyScript compiler and @extism/as-pdk are not installed in %s, and npm is not on PATH to install them; install npm (it comes with Node.js), then build again", ErrToolchain, dir)
	}
	verb := "install"
	if _, err := os.Stat(filepath.Join(dir, "package-lock.json")); err == nil {
		verb = "ci"
	}
	args := []string{verb, "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"}
	shown := "npm " + strings.Join(args, " ")
	if err := runTool(exec.CommandContext(ctx, npm, args...), dir, shown); err != nil {
		return "", fmt.Errorf("%w: installing the AssemblyScript compiler and @extism/as-pdk from package.json failed (npm needs the registry, https://registry.npmjs.org, or your npm configuration's): %w", ErrToolchain, err)
	}
	for _, p := range []string{asc, pdk} {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: `%s` in %s did not install %s; add assemblyscript and @extism/as-pdk to package.json's devDependencies", ErrToolchain, shown, dir, strings.TrimPrefix(p, dir+string(filepath.Separator)))
		}
	}
	return fmt.Sprintf("`%s`: node_modules lacked the compiler or the PDK", shown), nil
}

func runTool(cmd *exec.Cmd, dir, shown string) error {
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: `%s` in %s: %v\n%s", ErrCompile, shown, dir, err, strings.TrimSpace(out.String()))
	}
	return nil
}
