package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/authoring"
	"github.com/toolhost/toolhost/home"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/plugin"
)

func newPluginDevCmd(g *globalOptions) *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "dev [DIR]",
		Short: "Build and serve a plugin unsigned in a throwaway home; rebuild and reload on every change",
		Long: `Build the plugin in DIR (default .), install it unsigned into a new,
throwaway home (a temporary directory, deleted on exit — the operator's home and
its store are never touched) and serve it over HTTP and MCP under the same
sandbox and limits as a real install. Every change to a source file rebuilds
and reloads the plugin: the next call runs the new code, no restart (a
request over HTTP or MCP that arrives while sources changed since the last
build waits for their build). Each rebuild, the tool list and a log line per
call are printed here. A build that
fails is reported and the previous build keeps serving; a build under a new
name (plugin.json's name edited) replaces the plugin served.

Ctrl-C stops it.`,
		Example: "  toolhost plugin dev\n  toolhost plugin dev ./hello --addr 127.0.0.1:7412",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			if _, err := authoring.DetectLang(dir); err != nil {
				return err
			}
			devHome, err := os.MkdirTemp("", "toolhost-dev-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(devHome)
			g.home, g.allowUnsigned = devHome, true
			fmt.Fprintf(g.stdout, "dev home %s (throwaway: deleted on exit; unsigned plugins allowed only here)\n", devHome)
			d := newDevLoop(g, dir, filepath.Join(devHome, "dev.plugin"))
			return g.serve(cmd.Context(), serveOptions{addr: addr, background: func(ctx context.Context, hm *home.Home) (func(), error) { return d.start(ctx, hm.Host()) }, wrap: d.handler})
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:7412", "listen address (loopback)")
	return cmd
}

// devLoop rebuilds and reinstalls one plugin directory on change.
type devLoop struct {
	g      *globalOptions
	dir    string
	bundle string // where builds are packed: inside the throwaway home
	// mu serializes catching up with the sources (the poll loop's and the
	// requests'), and guards h, last and served.
	mu   sync.Mutex
	h    *host.Host
	ctx  context.Context // the loop's: ends when serve stops
	last string          // fingerprint of the sources at the last build
	// served is the build the dev home serves (nil before the first): the
	// only plugin installed there.
	served *plugin.Bundle
	// outputs are the regular files this process writes to (ownOutputs).
	outputs []os.FileInfo
}

func newDevLoop(g *globalOptions, dir, bundle string) *devLoop {
	return &devLoop{g: g, dir: dir, bundle: bundle, outputs: ownOutputs(g.stdout, g.stderr)}
}

// start builds and installs once (failing if that fails), then polls.
func (d *devLoop) start(ctx context.Context, h *host.Host) (func(), error) {
	d.mu.Lock()
	d.h = h
	d.last = d.fingerprint()
	err := d.rebuild(ctx, h)
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(ctx)
	d.mu.Lock()
	d.ctx = lctx
	d.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(300 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-t.C:
			}
			d.catchUp(lctx)
		}
	}()
	return func() { cancel(); <-done }, nil
}

// catchUp rebuilds and reloads when the sources changed since the last
// build, and returns once the build that covers them is served (or failed).
// A caller that finds a rebuild under way waits for it, then looks again.
func (d *devLoop) catchUp(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fp := d.fingerprint()
	if d.h == nil || fp == d.last {
		return
	}
	d.last = fp
	fmt.Fprintf(d.g.stdout, "change in %s: rebuilding\n", d.dir)
	if err := d.rebuild(ctx, d.h); err != nil {
		fmt.Fprintf(d.g.stdout, "build failed (the previous build keeps serving): %v\n", err)
	}
}

// handler makes every API request but liveness and metrics catch up with
// the sources first: the poll alone left a window of its period plus a
// whole build (seconds for Go) in which the next call after an edit still
// ran the old code. The build is not the request's: it runs under the
// loop's context, to its end even if the request goes away.
func (d *devLoop) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && r.URL.Path != "/metrics" {
			d.mu.Lock()
			ctx := d.ctx
			d.mu.Unlock()
			if ctx != nil {
				d.catchUp(ctx)
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (d *devLoop) rebuild(ctx context.Context, h *host.Host) error {
	res, err := authoring.Build(ctx, d.dir, d.bundle)
	if err != nil {
		return err
	}
	rep, err := d.install(ctx, h, res.Bundle)
	if err != nil {
		return err
	}
	printBuild(d.g, res)
	if plugin.Widens(rep.Changes) {
		printChanges(d.g.stdout, rep)
	}
	var tools []string
	for _, t := range h.Tools() {
		tools = append(tools, t.Name)
	}
	fmt.Fprintf(d.g.stdout, "serving %s %s: %s\n", rep.Name, rep.Version, strings.Join(tools, ", "))
	return nil
}

// install makes b the plugin the dev home serves. A build under another
// name (the author renamed the plugin in plugin.json) replaces the one
// served: left installed, the old plugin kept its tools answering and
// refused the new build's tools of the same names.
func (d *devLoop) install(ctx context.Context, h *host.Host, b *plugin.Bundle) (host.InstallReport, error) {
	// The same version with new content, and a grant the author just
	// added, are what development is: accept both, but show the changes.
	opts := host.InstallOptions{AllowDowngrade: true, AcceptWidening: true}
	prev := d.served
	renamed := prev != nil && prev.Manifest().Name != b.Manifest().Name
	if renamed {
		if err := h.Remove(prev.Manifest().Name); err != nil {
			return host.InstallReport{}, err
		}
	}
	rep, err := h.Install(ctx, b, opts)
	if err != nil {
		if renamed {
			if _, rerr := h.Install(context.WithoutCancel(ctx), prev, opts); rerr != nil {
				return rep, fmt.Errorf("%w; and the previous build %s could not be installed again: %v", err, prev.Manifest().Name, rerr)
			}
		}
		return rep, err
	}
	if renamed {
		fmt.Fprintf(d.g.stdout, "plugin renamed: %s removed, %s installed\n", prev.Manifest().Name, b.Manifest().Name)
	}
	d.served = b
	return rep, nil
}

// fingerprint summarizes the plugin's sources: every file's path, size
// and modification time, except build outputs and dependencies.
func (d *devLoop) fingerprint() string {
	var b strings.Builder
	filepath.WalkDir(d.dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := e.Name()
		if e.IsDir() {
			if p != d.dir && (name == "node_modules" || name == "build" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".wasm") || strings.HasSuffix(name, ".plugin") || strings.HasSuffix(name, ".tmp") {
			return nil
		}
		if fi, err := e.Info(); err == nil && !slices.ContainsFunc(d.outputs, func(o os.FileInfo) bool { return os.SameFile(o, fi) }) {
			fmt.Fprintf(&b, "%s %d %d %s\n", p, fi.Size(), fi.ModTime().UnixNano(), contentSum(p, fi))
		}
		return nil
	})
	return b.String()
}

// maxSummedSource is the size up to which a source's content is part of
// the fingerprint. Modification times are as coarse as the kernel's clock
// tick (a few ms): two same-size saves within one tick look the same by
// size and time alone, and the second was never built.
const maxSummedSource = 1 << 20

func contentSum(p string, fi os.FileInfo) string {
	if !fi.Mode().IsRegular() || fi.Size() > maxSummedSource {
		return "-"
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return "-"
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// ownOutputs returns the regular files among ws. `plugin dev > dev.log`
// run in the plugin's directory writes dev.log on every rebuild: were it a
// source, each rebuild's lines would start the next, for ever.
func ownOutputs(ws ...io.Writer) []os.FileInfo {
	var out []os.FileInfo
	for _, w := range ws {
		if f, ok := w.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
				out = append(out, fi)
			}
		}
	}
	return out
}
