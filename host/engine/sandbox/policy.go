package sandbox

import (
	"errors"
	"fmt"
	"strings"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/engine/wasmcheck"
	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/plugin"
)

// MaxTableElements bounds the elements of all tables of a module together
// (tables are not covered by the memory page limit). Go's wasip1 output
// declares about 6 000.
const MaxTableElements = 100_000

// providedImports is everything the sandbox provides to a module. Anything
// else is refused before compiling. extism's http_request is not provided:
// it checks only the first URL of a request, so redirects escape the
// allow-list; plugins reach the network only through our own fetch.
var providedImports = map[string]map[string]bool{
	"wasi_snapshot_preview1": set(
		"args_get", "args_sizes_get", "environ_get", "environ_sizes_get", "clock_res_get", "clock_time_get",
		"fd_advise", "fd_allocate", "fd_close", "fd_datasync", "fd_fdstat_get", "fd_fdstat_set_flags",
		"fd_fdstat_set_rights", "fd_filestat_get", "fd_filestat_set_size", "fd_filestat_set_times", "fd_pread",
		"fd_prestat_get", "fd_prestat_dir_name", "fd_pwrite", "fd_read", "fd_readdir", "fd_renumber", "fd_seek",
		"fd_sync", "fd_tell", "fd_write", "path_create_directory", "path_filestat_get", "path_filestat_set_times",
		"path_link", "path_open", "path_readlink", "path_remove_directory", "path_rename", "path_symlink",
		"path_unlink_file", "poll_oneoff", "proc_exit", "proc_raise", "sched_yield", "random_get"),
	"extism:host/env": set(
		"alloc", "free", "load_u8", "input_load_u8", "store_u64", "store_u8", "input_set", "output_set",
		"input_length", "input_offset", "output_length", "output_offset", "length", "length_unsafe", "reset",
		"error_set", "error_get", "memory_bytes", "input_load_u64", "load_u64", "config_get", "var_get", "var_set",
		"get_log_level", "log_trace", "log_debug", "log_info", "log_warn", "log_error"),
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Prevalidate checks a module against what the sandbox allows before any
// byte reaches the compiler: section counts against section sizes, memory
// against the manifest's page limit, tables, imports against what the host
// provides, and the tools' exports.
func Prevalidate(spec engine.Spec) error {
	_, err := prevalidate(spec)
	return err
}

// prevalidate is Prevalidate that also returns what the check learned.
func prevalidate(spec engine.Spec) (*wasmcheck.Module, error) {
	m, err := wasmcheck.Check(spec.Wasm, wasmcheck.Policy{
		MaxModuleBytes:   plugin.MaxWasmBytes,
		MaxMemoryPages:   spec.Limits.MemoryPages,
		MaxTableElements: MaxTableElements,
		AllowedImports: func(module, name string) bool {
			return providedImports[module][name]
		},
		RequiredExports: spec.Exports,
	})
	if err == nil {
		return m, nil
	}
	msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "wasmcheck: "), "invalid module: ")
	var pe *wasmcheck.PolicyError
	if errors.As(err, &pe) && strings.Contains(msg, "import") {
		msg += " (the sandbox provides WASI preview 1 and the Extism host functions, except http_request)"
	}
	return nil, toolerr.Errorf(toolerr.CodeInvalidModule, "%s", fmt.Sprint(msg))
}
