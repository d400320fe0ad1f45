package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/host/engine/wasmcheck"
)

// Reserved export names the snapshot pass adds to a module. Nothing else
// may use the prefix: a module that already exports a name with it is not
// prepared (its calls keep getting real fresh instances).
const (
	reservedPrefix = "toolhost:"
	// initExport is an empty function: calling it through extism runs the
	// guest runtime's initialization (extism does that before the first
	// export it calls) without running any of the plugin's own code, so the
	// instance can be snapshotted after its runtime started.
	initExport = reservedPrefix + "init"
	// globalExport + the global's index exports a defined mutable global,
	// so the host can read and restore it.
	globalExport = reservedPrefix + "global:"
)

// prepared is a module rewritten for snapshots.
type prepared struct {
	wasm []byte
	// globals are the export names of the module's defined mutable
	// globals, in index order.
	globals []string
}

var errNotPreparable = fmt.Errorf("the module already exports a name beginning with the reserved %q", reservedPrefix)

// prepareForSnapshot returns wasm with every defined mutable global
// exported under globalExport+index and an empty function exported as
// initExport. It reads only the sections it changes or needs (type,
// import, function, global, export, code) and copies the rest byte for
// byte; it is given modules that wasmcheck has verified, and fails
// (rather than guess) on anything it does not understand.
func prepareForSnapshot(wasm []byte) (*prepared, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:8], []byte("\x00asm\x01\x00\x00\x00")) {
		return nil, errors.New("not a wasm 1.0 module")
	}
	type section struct {
		id   byte
		body []byte
	}
	var secs []section
	for r := (wr{b: wasm, pos: 8}); r.pos < len(r.b); {
		id := r.byte()
		n := r.u32()
		body := r.take(int(n))
		if r.err != nil {
			return nil, fmt.Errorf("section at offset %d: %w", r.pos, r.err)
		}
		secs = append(secs, section{id, body})
	}
	find := func(id byte) []byte {
		for _, s := range secs {
			if s.id == id {
				return s.body
			}
		}
		return nil
	}

	// Types: reuse a [] -> [] type if there is one.
	typeCount, emptyType := uint32(0), -1
	if b := find(1); b != nil {
		r := wr{b: b}
		typeCount = r.u32()
		for i := uint32(0); i < typeCount && r.err == nil; i++ {
			if r.byte() != 0x60 {
				return nil, errors.New("type section: not a function type")
			}
			params, results := r.skipVec(), r.skipVec()
			if params == 0 && results == 0 && emptyType < 0 {
				emptyType = int(i)
			}
		}
		if r.err != nil {
			return nil, fmt.Errorf("type section: %w", r.err)
		}
	}
	// Imports: how many functions and globals come first in their index spaces.
	var importedFuncs, importedGlobals uint32
	if b := find(2); b != nil {
		r := wr{b: b}
		for n := r.u32(); n > 0 && r.err == nil; n-- {
			switch _, _, kind := r.importEntry(); kind {
			case 0:
				importedFuncs++
			case 3:
				importedGlobals++
			}
		}
		if r.err != nil {
			return nil, fmt.Errorf("import section: %w", r.err)
		}
	}
	var definedFuncs uint32
	if b := find(3); b != nil {
		r := wr{b: b}
		definedFuncs = r.u32()
		if r.err != nil {
			return nil, fmt.Errorf("function section: %w", r.err)
		}
	}
	p := &prepared{}
	if b := find(6); b != nil {
		r := wr{b: b}
		for i, n := uint32(0), r.u32(); i < n && r.err == nil; i++ {
			vt := r.byte()
			if mut := r.byte(); mut == 1 {
				// The host reads and writes globals as 64-bit numbers:
				// a mutable v128 or reference global cannot be restored.
				if vt != 0x7f && vt != 0x7e && vt != 0x7d && vt != 0x7c {
					return nil, fmt.Errorf("global %d: a mutable global of type %#x cannot be snapshotted", importedGlobals+i, vt)
				}
				p.globals = append(p.globals, globalExport+strconv.FormatUint(uint64(importedGlobals+i), 10))
			}
			r.constExpr()
		}
		if r.err != nil {
			return nil, fmt.Errorf("global section: %w", r.err)
		}
	}
	var exports []byte
	var exportCount uint32
	if b := find(7); b != nil {
		r := wr{b: b}
		exportCount = r.u32()
		start := r.pos
		for i := uint32(0); i < exportCount && r.err == nil; i++ {
			if strings.HasPrefix(r.name(), reservedPrefix) {
				return nil, errNotPreparable
			}
			r.byte()
			r.u32()
		}
		if r.err != nil || r.pos != len(b) {
			return nil, fmt.Errorf("export section: %v", r.err)
		}
		exports = b[start:]
	}
	var codeCount uint32
	var code []byte
	if b := find(10); b != nil {
		r := wr{b: b}
		codeCount = r.u32()
		if r.err != nil || codeCount != definedFuncs {
			return nil, errors.New("code section: malformed or does not match the function section")
		}
		code = b[r.pos:]
	}

	// The new sections.
	newType := uint32(emptyType)
	var typeSec []byte
	if emptyType < 0 {
		newType = typeCount
		typeSec = uleb(nil, typeCount+1)
		if b := find(1); b != nil {
			r := wr{b: b}
			r.u32()
			typeSec = append(typeSec, b[r.pos:]...)
		}
		typeSec = append(typeSec, 0x60, 0, 0)
	}
	funcSec := uleb(nil, definedFuncs+1)
	if b := find(3); b != nil {
		r := wr{b: b}
		r.u32()
		funcSec = append(funcSec, b[r.pos:]...)
	}
	funcSec = uleb(funcSec, newType)
	codeSec := append(uleb(nil, codeCount+1), code...)
	codeSec = append(codeSec, 2, 0, 0x0b) // size 2: no locals, end
	exportSec := uleb(nil, exportCount+1+uint32(len(p.globals)))
	exportSec = append(exportSec, exports...)
	exportSec = exportEntry(exportSec, initExport, 0, importedFuncs+definedFuncs)
	for _, name := range p.globals {
		idx, _ := strconv.ParseUint(strings.TrimPrefix(name, globalExport), 10, 32)
		exportSec = exportEntry(exportSec, name, 3, uint32(idx))
	}

	// Reassemble: replaced sections in place, missing ones inserted in
	// the order the spec requires.
	replace := map[byte][]byte{3: funcSec, 7: exportSec, 10: codeSec}
	if typeSec != nil {
		replace[1] = typeSec
	}
	out := append([]byte(nil), wasm[:8]...)
	emit := func(id byte, body []byte) {
		out = append(out, id)
		out = uleb(out, uint32(len(body)))
		out = append(out, body...)
	}
	for _, s := range secs {
		if s.id != 0 {
			for id, body := range pendingBefore(s.id, replace) {
				emit(id, body)
			}
		}
		if body, ok := replace[s.id]; ok && s.id != 0 {
			emit(s.id, body)
			delete(replace, s.id)
			continue
		}
		emit(s.id, s.body)
	}
	for id, body := range pendingBefore(0xff, replace) {
		emit(id, body)
	}
	p.wasm = out
	return p, nil
}

// sectionOrder is the position of each known section id in a module.
var sectionOrder = map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8, 9: 9, 12: 10, 10: 11, 11: 12, 0xff: 99}

// pendingBefore yields, in order, and removes from replace the sections
// that must come before section id and have not been written yet.
func pendingBefore(id byte, replace map[byte][]byte) func(func(byte, []byte) bool) {
	return func(yield func(byte, []byte) bool) {
		for _, want := range []byte{1, 3, 7, 10} {
			body, ok := replace[want]
			if !ok || sectionOrder[want] >= sectionOrder[id] {
				continue
			}
			delete(replace, want)
			if !yield(want, body) {
				return
			}
		}
	}
}

func exportEntry(b []byte, name string, kind byte, idx uint32) []byte {
	b = uleb(b, uint32(len(name)))
	b = append(b, name...)
	b = append(b, kind)
	return uleb(b, idx)
}

func uleb(b []byte, v uint32) []byte { return binary.AppendUvarint(b, uint64(v)) }

// wr reads wasm encodings; the first error sticks and later reads return
// zero values.
type wr struct {
	b   []byte
	pos int
	err error
}

func (r *wr) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s at offset %d", what, r.pos)
	}
}

func (r *wr) byte() byte {
	if r.err != nil || r.pos >= len(r.b) {
		r.fail("truncated")
		return 0
	}
	r.pos++
	return r.b[r.pos-1]
}

func (r *wr) leb(max uint) uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= max {
			r.fail("LEB128 too long")
			return 0
		}
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
}

func (r *wr) u32() uint32 {
	v := r.leb(32)
	if v > 1<<32-1 {
		r.fail("u32 out of range")
		return 0
	}
	return uint32(v)
}

func (r *wr) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b)-r.pos {
		r.fail("truncated")
		return nil
	}
	r.pos += n
	return r.b[r.pos-n : r.pos]
}

func (r *wr) name() string { return string(r.take(int(r.u32()))) }

// importEntry reads one import: its module and field names and its kind.
func (r *wr) importEntry() (module, name string, kind byte) {
	module, name = r.name(), r.name()
	return module, name, r.importDesc()
}

// importDesc reads an import's descriptor and returns its kind (0 func,
// 1 table, 2 memory, 3 global).
func (r *wr) importDesc() (kind byte) {
	switch kind = r.byte(); kind {
	case 0: // func: type index
		r.u32()
	case 1: // table: reference type, limits
		r.byte()
		r.limits()
	case 2: // memory
		r.limits()
	case 3: // global: value type, mutability
		r.byte()
		r.byte()
	default:
		r.fail(fmt.Sprintf("unsupported import kind %d", kind))
	}
	return kind
}

// skipVec skips a vector of one-byte value types and returns its length.
func (r *wr) skipVec() uint32 {
	n := r.u32()
	r.take(int(n))
	return n
}

func (r *wr) limits() {
	flags := r.byte()
	if flags > 7 {
		r.fail("unknown limits flags")
	}
	r.leb(64)
	if flags&1 != 0 {
		r.leb(64)
	}
}

// constExpr skips a constant expression up to and including its end.
func (r *wr) constExpr() {
	for r.err == nil {
		switch op := r.byte(); op {
		case 0x0b:
			return
		case 0x41, 0x23, 0xd2: // i32.const global.get ref.func
			r.leb(32)
		case 0x42: // i64.const
			r.leb(64)
		case 0x43:
			r.take(4)
		case 0x44:
			r.take(8)
		case 0xd0: // ref.null t
			r.byte()
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended-const add sub mul
		case 0xfd: // v128.const
			if r.u32() != 12 {
				r.fail("unsupported instruction in a constant expression")
			}
			r.take(16)
		default:
			r.fail(fmt.Sprintf("unsupported instruction %#x in a constant expression", op))
		}
	}
}

// snapshotRefusal says why instances of the verified module m cannot be
// made fresh by restoring a snapshot (its calls then get real fresh
// instances), or returns nil: tables and dropped data segments are state
// the snapshot does not hold.
func snapshotRefusal(m *wasmcheck.Module) error {
	switch {
	case m.MutatesTables:
		return errors.New("the module changes its tables")
	case m.DropsData:
		return errors.New("the module drops data segments")
	}
	return nil
}
