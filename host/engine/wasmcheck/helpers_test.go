package wasmcheck

// Tiny binary-format assembler for hand-written test modules.

func leb(v uint64) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, b|0x80)
			continue
		}
		return append(out, b)
	}
}

func u32(v uint32) []byte { return leb(uint64(v)) }

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// mod prefixes the header to the given sections.
func mod(sections ...[]byte) []byte {
	return cat(append([][]byte{{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}}, sections...)...)
}

// sec builds a section with a correct size.
func sec(id byte, content ...[]byte) []byte {
	c := cat(content...)
	return cat([]byte{id}, u32(uint32(len(c))), c)
}

// vec builds a vector whose count matches its items.
func vec(items ...[]byte) []byte {
	return cat(u32(uint32(len(items))), cat(items...))
}

func str(s string) []byte { return cat(u32(uint32(len(s))), []byte(s)) }

func b(bs ...byte) []byte { return bs }

const bomb = 0xFFFFFFFF

var (
	// Common building blocks.
	typeVoid  = sec(1, vec(b(0x60, 0, 0)))                  // type 0: [] -> []
	funcOne   = sec(3, vec(b(0)))                           // one function of type 0
	codeOne   = sec(10, vec(cat(u32(2), b(0x00, 0x0b))))    // body: no locals, end
	memOne    = sec(5, vec(b(0x01, 0x01, 0x02)))            // memory min 1 max 2
	exportRun = sec(7, vec(cat(str("run"), b(0x00, 0x00)))) // export func 0 as "run"
)

// body builds a function body from local declarations and instructions
// (the final end is added).
func body(locals []byte, instrs ...byte) []byte {
	c := cat(locals, instrs, b(0x0b))
	return cat(u32(uint32(len(c))), c)
}

// oneFunc builds a module with type 0 = [] -> [], one function with the
// given body, exported as "run", plus extra sections inserted in canonical
// position by the caller (they are placed between function and export).
func oneFunc(bodyBytes []byte, mid ...[]byte) []byte {
	return mod(cat(typeVoid, funcOne, cat(mid...), exportRun, sec(10, vec(bodyBytes))))
}
