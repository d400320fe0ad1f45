package control_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
)

// The Go API of a home that `toolhost serve` (or `toolhost mcp`) holds:
// calls go through its pipeline like every other entry point's (approval
// policy, hooks, audit, metrics). Label the context with host.EntryGo, or
// the host records the calls as the CLI's.
func ExampleDial() {
	ctx := host.WithEntry(context.Background(), host.EntryGo)
	home := os.Getenv("TOOLHOST_HOME")
	c, err := control.Dial(ctx, filepath.Join(home, control.SocketName))
	if err != nil {
		fmt.Println(err) // control.ErrNoServer: start `toolhost serve`
		return
	}
	defer c.Close()
	tools, err := c.Tools(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range tools {
		fmt.Println(t.Name, t.Plugin, t.Version)
	}
	res, err := c.Call(ctx, "get_current_time", []byte(`{"timezone":"Asia/Tokyo"}`))
	switch toolerr.CodeOf(err) {
	case "":
		if err != nil {
			fmt.Println(err) // the host did not answer (it stopped)
			return
		}
		fmt.Println(string(res))
	case toolerr.CodeInvalidArguments, toolerr.CodeToolNotFound:
		fmt.Println("fix the call:", err)
	default: // timeout, denied, cancelled (ctx ended), plugin_error, …
		fmt.Println("the call failed:", err)
	}
}
