package plugin

import (
	"bytes"
	"fmt"
)

// wasmHeader is the first 8 bytes of every WebAssembly core module: the
// magic "\0asm" and binary version 1.
var wasmHeader = []byte("\x00asm\x01\x00\x00\x00")

// checkWasmHeader refuses a module that does not start with wasmHeader.
//
// Why here, when the sandbox's pre-validator (host/engine/wasmcheck) reads
// the whole module at install: a bundle's module.wasm is by definition a
// WebAssembly module, and 8 bytes settle whether it can be one. Checked
// at pack, sign and verify, a file that is not WebAssembly (a link to
// /etc/shadow, a component, a text file named plugin.wasm) is refused
// before a curator signs it or a user is told it verifies, not at the
// end by review or install. The full check stays in the host: it depends
// on the sandbox's limits and imports, which may change between versions.
func checkWasmHeader(wasm []byte) error {
	if bytes.HasPrefix(wasm, wasmHeader) {
		return nil
	}
	const build = "build the plugin for a core WebAssembly target (e.g. GOOS=wasip1 GOARCH=wasm, or wasm32-wasip1) and pack it again"
	switch head := wasm[:min(len(wasm), 8)]; {
	case len(wasm) < 8:
		return fmt.Errorf("%w: the module is %d bytes, too short to be WebAssembly (a module starts with the 8 bytes 00 61 73 6d 01 00 00 00); %s", ErrInvalidBundle, len(wasm), build)
	case !bytes.HasPrefix(wasm, wasmHeader[:4]):
		return fmt.Errorf("%w: the module is not WebAssembly: it starts with % x, not the magic number 00 61 73 6d (\"\\0asm\"); %s", ErrInvalidBundle, head[:4], build)
	case bytes.Equal(head[4:], []byte{0x0d, 0x00, 0x01, 0x00}):
		return fmt.Errorf("%w: the module is a WebAssembly component, not a core module (binary version 1); %s", ErrInvalidBundle, build)
	default:
		return fmt.Errorf("%w: the module is WebAssembly binary version % x; only version 1 (01 00 00 00) is supported; %s", ErrInvalidBundle, head[4:], build)
	}
}
