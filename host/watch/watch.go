// Package watch installs, upgrades and removes plugins from bundles kept in
// a directory (`toolhost serve --watch DIR`).
//
// What it guarantees: every bundle goes through the host's Install, so it
// is verified against the trust policy, checked against the rollback
// high-water mark and pre-validated exactly like `toolhost plugin install`;
// an upgrade that widens permissions is refused (with the changes in the
// log) and waits for an operator's `toolhost plugin install --yes`, never
// applied silently. A bad bundle is refused with its reason while the
// other plugins keep serving; it is retried only when the file changes.
// Only regular files (or links to them) are read: a FIFO, socket or device
// named *.plugin is skipped with a logged reason, without being opened for
// long enough to block, so it never stalls the other bundles or shutdown.
//
// Which plugins a deleted bundle removes: the plugin its file owns, and
// nothing else. A file owns the plugin the watcher installed or upgraded
// from it, and — the directory as the operator left it being what the
// watcher manages — the plugin of every bundle present when it starts,
// installed already or not (so ownership survives a restart). A file
// dropped in while it runs whose bundle is already installed exactly
// ("already installed, not by this directory" in the log) owns nothing: an
// operator who drops a copy of a plugin installed with `toolhost plugin
// install`, and later deletes the copy, expects the plugin to stay as the
// CLI left it. To hand such a plugin over to the directory, remove it with
// the CLI, then touch the file.
//
// What it does not do: it keeps no state across restarts — a bundle deleted
// while the host was down leaves its plugin installed. It polls (Interval, default 250 ms) rather than using
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
	"github.com/toolhost/toolhost/internal/userfile"
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
	mode    os.FileMode // type bits only
	// settled: the file decoded whole, or held still for a poll, and was
	// processed; it is not looked at again until its size or time changes.
	settled bool
	// plugin is the name of the plugin this file installed, if it did.
	plugin string
}

// Watcher keeps a directory's bundles installed. Run owns all its state;
// it is used from one goroutine.
type Watcher struct {
	opts  Options
	files map[string]*fileState // by file name in Dir
	// atStart holds the files present at the first scan: the directory as
	// the operator left it, whose bundles own their plugins even when
	// already installed (so ownership survives a restart); nil before the
	// first scan.
	atStart map[string]bool
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

// Scan looks at the directory once: new or changed files that decode as a
// whole bundle, or that held still since the previous scan, are installed,
// deleted ones removed.
func (w *Watcher) Scan(ctx context.Context) {
	entries, err := os.ReadDir(w.opts.Dir)
	if err != nil {
		w.opts.Logger.Error("watch: cannot read the directory; retrying", "dir", w.opts.Dir, "err", err)
		return
	}
	present := map[string]bool{}
	first := w.atStart == nil
	if first {
		w.atStart = map[string]bool{}
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".plugin") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		// Stat follows a symbolic link, so a link to a bundle is read like
		// the bundle; it never opens anything, so it cannot block.
		fi, err := os.Stat(filepath.Join(w.opts.Dir, e.Name()))
		if err != nil {
			continue // deleted between ReadDir and Stat (or a dangling link): the next scan sees it gone
		}
		present[e.Name()] = true
		if first {
			w.atStart[e.Name()] = true
		}
		st, seen := w.files[e.Name()]
		if !seen || st.size != fi.Size() || !st.modTime.Equal(fi.ModTime()) || st.mode != fi.Mode().Type() {
			// New or changed: taken now if it decodes whole, else once
			// it held still for a poll.
			prev := ""
			if seen {
				prev = st.plugin
			}
			st = &fileState{size: fi.Size(), modTime: fi.ModTime(), mode: fi.Mode().Type(), plugin: prev}
			w.files[e.Name()] = st
			if !fi.Mode().IsRegular() {
				// A FIFO, socket or device: opening one can block until a
				// writer appears, and reading one never ends. Say so once.
				st.settled = true
				w.refuseNotRegular(e.Name(), fi.Mode())
				continue
			}
			// A whole bundle is taken at once: a copy still under way
			// does not decode (a bundle is a canonical archive whose
			// digest covers every member), so only a file that does not
			// decode waits to hold still before it is refused.
			if b := w.decodeNow(e.Name()); b != nil {
				st.settled = true
				w.installBundle(ctx, e.Name(), st, b)
			}
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
		delete(w.atStart, name)
		w.remove(ctx, name, st)
	}
}

func (w *Watcher) install(ctx context.Context, file string, st *fileState) {
	log := w.opts.Logger.With("file", filepath.Join(w.opts.Dir, file))
	b, err := w.readBundle(file)
	var nr *userfile.NotRegularError
	switch {
	case errors.As(err, &nr):
		w.refuseNotRegular(file, nr.Mode)
		return
	case errors.Is(err, errUnreadable):
		log.Error("watch: refused bundle", "reason", err.Error(), "do", "make the file readable by this user, then touch it to retry")
		return
	case err != nil:
		log.Error("watch: refused bundle", "reason", err.Error(), "do", "replace the file with an intact bundle")
		return
	}
	w.installBundle(ctx, file, st, b)
}

// errUnreadable marks a bundle file that could not be opened.
var errUnreadable = errors.New("cannot open the bundle file")

// readBundle decodes file. It opens it without blocking: the file may have
// been swapped for a FIFO since it was looked at, and a blocking open of a
// FIFO waits for a writer — forever, holding up every other bundle and
// shutdown.
func (w *Watcher) readBundle(file string) (*plugin.Bundle, error) {
	f, _, err := userfile.Open(filepath.Join(w.opts.Dir, file))
	if err != nil {
		var nr *userfile.NotRegularError
		if errors.As(err, &nr) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", errUnreadable, err)
	}
	defer f.Close()
	return plugin.Decode(f)
}

// decodeNow returns file's bundle when it decodes as it is now, nil on any
// error (which the scan that finds the file settled reports).
func (w *Watcher) decodeNow(file string) *plugin.Bundle {
	b, err := w.readBundle(file)
	if err != nil {
		return nil
	}
	return b
}

// installBundle installs b, read from file, through the host.
func (w *Watcher) installBundle(ctx context.Context, file string, st *fileState, b *plugin.Bundle) {
	log := w.opts.Logger.With("file", filepath.Join(w.opts.Dir, file))
	path := filepath.Join(w.opts.Dir, file)
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
	if rep.Unchanged {
		// The file matches what is installed: the watcher changed
		// nothing, so the file takes no ownership — deleting it must not
		// remove a plugin someone installed with the CLI. A file that
		// installed this plugin earlier in this run (touched, or
		// rewritten with the same bundle) keeps owning it.
		if st.plugin == m.Name || w.atStart[file] {
			st.plugin = m.Name
			log.Info("watch: already installed", "plugin", m.Name, "version", m.Version, "digest", rep.Digest.Short())
			return
		}
		st.plugin = ""
		log.Info("watch: already installed, not by this directory; deleting the file will leave it installed", "plugin", m.Name,
			"version", m.Version, "digest", rep.Digest.Short(),
			"do", fmt.Sprintf("to manage it from this directory: toolhost plugin remove %s, then touch the file", m.Name))
		return
	}
	st.plugin = m.Name
	if rep.SignaturesUpdated {
		log.Info("watch: signatures updated", "plugin", m.Name, "version", m.Version, "digest", rep.Digest.Short(), "signers", strings.Join(rep.Decision.Signers, ", "))
		return
	}
	if rep.Previous != nil {
		log.Info("watch: upgraded", "plugin", m.Name, "from", rep.Previous.Version, "to", m.Version, "digest", rep.Digest.Short(), "changes", changesText(rep.Changes))
		return
	}
	log.Info("watch: installed", "plugin", m.Name, "version", m.Version, "digest", rep.Digest.Short(), "tools", len(m.Tools))
}

// refuseNotRegular logs that file is skipped because it is not a regular
// file. The caller marks the file settled, so this is logged once until the
// file changes.
func (w *Watcher) refuseNotRegular(file string, mode os.FileMode) {
	w.opts.Logger.Error("watch: skipped file", "file", filepath.Join(w.opts.Dir, file),
		"reason", fmt.Sprintf("not a regular file (%s); only bundle files are installed", userfile.KindOf(mode)),
		"do", "replace it with a bundle file (toolhost plugin pack writes one), or remove it")
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
