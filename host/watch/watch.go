// Package watch installs, upgrades and removes plugins from bundles kept in
// a directory (`toolhost serve --watch DIR`).
//
// What it guarantees: every bundle goes through the host's Install, so it
// is verified against the trust policy, checked against the rollback
// high-water mark and pre-validated exactly like `toolhost plugin install`;
// an upgrade that widens permissions is refused (with the changes in the
// log) and waits for an operator's `toolhost plugin install --yes`, never
// applied silently. A bundle deleted from the directory uninstalls the
// plugin it installed. A bad bundle is refused with its reason while the
// other plugins keep serving; it is retried only when the file changes.
//
// What it does not do: it never removes a plugin it did not install from
// the directory (one installed with the CLI stays), and it keeps no state
// across restarts — a bundle deleted while the host was down leaves its
// plugin installed. It polls (Interval, default 250 ms) rather than using
// inotify, so it works the same on every file system, network mounts
// included; a file is read once its size and modification time have held
// still for one poll, so a bundle being copied is not read half-written.
package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/plugin"
)

// Installer is what the watcher needs from the host: the management API
// of the process that holds the store (api/control's Governed, so every
// install and removal is audited like the CLI's). Install and Remove must
// be safe to call while the host serves calls.
type Installer interface {
	Install(ctx context.Context, b *plugin.Bundle, opts host.InstallOptions) (host.InstallReport, error)
	Remove(ctx context.Context, name string) error
}

// Options configure a Watcher.
type Options struct {
	Dir    string
	Host   Installer
	Logger *slog.Logger
	// Interval between scans; default 250 ms.
	Interval time.Duration
}

// fileState is what the watcher knows about one bundle file.
type fileState struct {
	size    int64
	modTime time.Time
	// settled: the file held still for a poll and was processed; it is
	// not looked at again until its size or time changes.
	settled bool
	// plugin is the name of the plugin this file installed, if it did.
	plugin string
}

// Watcher keeps a directory's bundles installed. Run owns all its state;
// it is used from one goroutine.
type Watcher struct {
	opts  Options
	files map[string]*fileState // by file name in Dir
}

// New checks the directory and returns a watcher for it.
func New(opts Options) (*Watcher, error) {
	if opts.Host == nil {
		return nil, errors.New("watch: no host")
	}
	fi, err := os.Stat(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("watch: %w (create the directory, or point --watch at an existing one)", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("watch: %s is not a directory", opts.Dir)
	}
	if opts.Interval <= 0 {
		opts.Interval = 250 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Watcher{opts: opts, files: map[string]*fileState{}}, nil
}

// Run scans the directory until ctx ends. A failing scan (the directory
// vanished) is logged and retried.
func (w *Watcher) Run(ctx context.Context) {
	t := time.NewTicker(w.opts.Interval)
	defer t.Stop()
	for {
		w.Scan(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Scan looks at the directory once: new or changed bundles that held still
// since the previous scan are installed, deleted ones removed.
func (w *Watcher) Scan(ctx context.Context) {
	entries, err := os.ReadDir(w.opts.Dir)
	if err != nil {
		w.opts.Logger.Error("watch: cannot read the directory; retrying", "dir", w.opts.Dir, "err", err)
		return
	}
	present := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".plugin") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // deleted between ReadDir and Info: the next scan sees it gone
		}
		present[e.Name()] = true
		st, seen := w.files[e.Name()]
		if !seen || st.size != fi.Size() || !st.modTime.Equal(fi.ModTime()) {
			// New or changed: wait one poll for it to hold still.
			prev := ""
			if seen {
				prev = st.plugin
			}
			w.files[e.Name()] = &fileState{size: fi.Size(), modTime: fi.ModTime(), plugin: prev}
			continue
		}
		if !st.settled {
			st.settled = true
			w.install(ctx, e.Name(), st)
		}
	}
	for name, st := range w.files {
		if present[name] {
			continue
		}
		delete(w.files, name)
		w.remove(ctx, name, st)
	}
}

func (w *Watcher) install(ctx context.Context, file string, st *fileState) {
	log := w.opts.Logger.With("file", filepath.Join(w.opts.Dir, file))
	path := filepath.Join(w.opts.Dir, file)
	f, err := os.Open(path)
	if err != nil {
		log.Error("watch: refused bundle", "reason", err.Error())
		return
	}
	b, err := plugin.Decode(f)
	f.Close()
	if err != nil {
		log.Error("watch: refused bundle", "reason", err.Error(), "do", "replace the file with an intact bundle")
		return
	}
	m := b.Manifest()
	if owner := w.ownerOf(m.Name, file); owner != "" {
		log.Error("watch: refused bundle", "plugin", m.Name, "reason", fmt.Sprintf("plugin %s is already installed from %s in this directory", m.Name, owner), "do", "keep one bundle per plugin in the directory")
		return
	}
	rep, err := w.opts.Host.Install(ctx, b, host.InstallOptions{})
	switch {
	case errors.Is(err, host.ErrWidening):
		log.Warn("watch: upgrade waits for confirmation", "plugin", m.Name, "version", m.Version, "reason", err.Error(),
			"changes", changesText(rep.Changes), "do", fmt.Sprintf("review, then run: toolhost plugin install --yes %s", path))
		return
	case err != nil:
		log.Error("watch: refused bundle", "plugin", m.Name, "version", m.Version, "reason", err.Error(),
			"do", "fix the cause (e.g. trust the signer), then replace or touch the file to retry")
		return
	}
	st.plugin = m.Name
	switch {
	case rep.Unchanged:
		log.Info("watch: already installed", "plugin", m.Name, "version", m.Version, "digest", rep.Digest.Short())
	case rep.Previous != nil:
		log.Info("watch: upgraded", "plugin", m.Name, "from", rep.Previous.Version, "to", m.Version, "digest", rep.Digest.Short(), "changes", changesText(rep.Changes))
	default:
		log.Info("watch: installed", "plugin", m.Name, "version", m.Version, "digest", rep.Digest.Short(), "tools", len(m.Tools))
	}
}

// ownerOf returns another file in the directory that installed plugin name.
func (w *Watcher) ownerOf(name, file string) string {
	for f, st := range w.files {
		if f != file && st.plugin == name {
			return f
		}
	}
	return ""
}

func (w *Watcher) remove(ctx context.Context, file string, st *fileState) {
	if st.plugin == "" {
		return // it never installed anything
	}
	log := w.opts.Logger.With("file", filepath.Join(w.opts.Dir, file), "plugin", st.plugin)
	if err := w.opts.Host.Remove(ctx, st.plugin); err != nil {
		if errors.Is(err, host.ErrNotInstalled) {
			log.Info("watch: bundle deleted; its plugin was already removed")
			return
		}
		log.Error("watch: bundle deleted but removing its plugin failed", "err", err)
		return
	}
	log.Info("watch: removed")
}

func changesText(cs []plugin.Change) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		mark := ""
		if c.Widens {
			mark = "+ "
		}
		parts[i] = mark + c.Text
	}
	return strings.Join(parts, "; ")
}
