package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolhost/toolhost/curator"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/engine/sandbox"
	"github.com/toolhost/toolhost/plugin"
	"github.com/toolhost/toolhost/store"
)

// A host embedded in a Go program, over a store of its own. It applies
// only what Options give it: without a Governor every call is allowed (no
// approval policy, no hooks) and without Observers nothing is audited, so
// do not open a home that the toolhost CLI manages this way: open that
// one with home.Open, or reach it through its running serve (control.Dial).
func Example_embedded() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "embedded")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(filepath.Join(dir, "store"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	engine, err := sandbox.NewInProcess(filepath.Join(dir, "cache"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer engine.Close(ctx)
	h, err := host.New(host.Options{Store: st, Engine: engine})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close() // before the engine and the store: defers run last-in first-out

	pub, err := os.ReadFile("keys/alice.pub") // made by `toolhost curator keygen`
	if err != nil {
		fmt.Println(err)
		return
	}
	key, err := curator.ParsePublicKey(pub)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := h.AddTrustedKey(key.Name, key.Key); err != nil {
		fmt.Println(err)
		return
	}
	f, err := os.Open("time.plugin") // signed by alice
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	b, err := plugin.Decode(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := h.Install(ctx, b, host.InstallOptions{}); err != nil {
		fmt.Println(err) // host.ErrNotAllowed: not signed by a trusted key
		return
	}
	for _, t := range h.Tools() {
		fmt.Println(t.Name)
	}
	// Errors are *toolerr.Error; a ctx that ends stops the call
	// (toolerr.CodeCancelled, or CodeTimeout at its deadline).
	res, err := h.Call(ctx, "get_current_time", []byte(`{"timezone":"UTC"}`))
	fmt.Println(string(res), err)
}
