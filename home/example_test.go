package home_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolhost/toolhost/home"
	"github.com/toolhost/toolhost/host/toolerr"
)

// A Go program that calls the tools of the toolhost home the CLI manages,
// when no `toolhost serve` holds it. Its main begins with the worker hook,
// since it runs its own executable as the sandbox workers:
//
//	func main() {
//		if code, ok := home.RunWorker(); ok {
//			os.Exit(code)
//		}
//		…
//	}
func ExampleOpen() {
	ctx := context.Background()
	exe, err := os.Executable()
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.UserHomeDir()
	hm, err := home.Open(ctx, filepath.Join(dir, ".toolhost"), home.Options{
		WorkerExecutable: exe,  // or the toolhost executable's path
		ServeControl:     true, // asks wait for `toolhost approvals approve ID`
	})
	if err != nil {
		fmt.Println(err) // store.ErrLocked: a serve holds it; use control.Dial
		return
	}
	defer hm.Close()
	res, err := hm.Call(ctx, "get_current_time", []byte(`{"timezone":"UTC"}`))
	if err != nil {
		fmt.Println(toolerr.CodeOf(err), err) // denied by the policy, a hook or a person, …
		return
	}
	fmt.Println(string(res))
}
