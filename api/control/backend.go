package control

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/toolhost/toolhost/host"
)

// Backend adapts a Client to the consumer interfaces of the API servers
// (Tools, Call, Plugins, Changed), so `toolhost mcp` can serve the tools of
// a host running in another process. It follows the host's changes with a
// long poll until ctx ends.
type Backend struct {
	c   *Client
	log *slog.Logger

	mu      sync.Mutex
	changed chan struct{}
}

// NewBackend starts following the host's changes. It learns the current
// generation before it returns, so no change after NewBackend is missed.
func NewBackend(ctx context.Context, c *Client, log *slog.Logger) *Backend {
	b := &Backend{c: c, log: log, changed: make(chan struct{})}
	last := int64(-1)
	if gen, err := c.WaitChange(ctx, -1); err == nil {
		last = int64(gen)
	}
	go b.follow(ctx, last)
	return b
}

func (b *Backend) follow(ctx context.Context, last int64) {
	for ctx.Err() == nil {
		gen, err := b.c.WaitChange(ctx, last)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			b.log.Warn("lost contact with the running toolhost; retrying", "err", err)
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return
			}
			last = -1 // it may have changed while we were away
			b.signal()
			continue
		}
		if last >= 0 && int64(gen) != last {
			b.signal()
		}
		last = int64(gen)
	}
}

func (b *Backend) signal() {
	b.mu.Lock()
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// Changed returns a channel closed at the next change.
func (b *Backend) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// Tools lists the host's tools; nil when the host does not answer.
func (b *Backend) Tools() []host.ToolInfo {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts, err := b.c.Tools(ctx)
	if err != nil {
		b.log.Warn("cannot list tools of the running toolhost", "err", err)
	}
	return ts
}

// Plugins lists the host's plugins; nil when the host does not answer.
func (b *Backend) Plugins() []host.PluginInfo {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ps, err := b.c.Plugins(ctx)
	if err != nil {
		b.log.Warn("cannot list plugins of the running toolhost", "err", err)
	}
	return ps
}

// Call runs a tool in the host process. The Backend serves `toolhost
// mcp`, so a call whose ctx names no entry point is an mcp-stdio one.
func (b *Backend) Call(ctx context.Context, tool string, args []byte) (json.RawMessage, error) {
	if _, ok := host.LookupEntry(ctx); !ok {
		ctx = host.WithEntry(ctx, host.EntryMCPStdio)
	}
	return b.c.Call(ctx, tool, args)
}
