package wasmcheck

import (
	"bytes"
	"fmt"
)

// Section ids.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
)

var sectionNames = [...]string{
	secCustom: "custom", secType: "type", secImport: "import", secFunction: "function",
	secTable: "table", secMemory: "memory", secGlobal: "global", secExport: "export",
	secStart: "start", secElement: "element", secCode: "code", secData: "data",
	secDataCount: "data count",
}

// sectionRank is the canonical order of the non-custom sections; the data
// count section sits between element and code.
var sectionRank = [...]int{
	secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5, secGlobal: 6,
	secExport: 7, secStart: 8, secElement: 9, secDataCount: 10, secCode: 11, secData: 12,
}

var (
	wasmMagic     = []byte{0x00, 0x61, 0x73, 0x6d}
	wasmVersion1  = []byte{0x01, 0x00, 0x00, 0x00}
	componentVers = []byte{0x0d, 0x00, 0x01, 0x00}
)

// Check parses wasm without allocating more than O(len(wasm)) and enforces
// p. On success it returns a summary of the module. If the module is
// malformed it returns (nil, *Error); if it is well formed but refused by the
// policy it returns the summary together with a *PolicyError (except when the
// module is too large to be parsed at all).
func Check(wasm []byte, p Policy) (*Module, error) {
	p = p.withDefaults()
	if len(wasm) > p.MaxModuleBytes {
		return nil, refuse(RuleModuleSize, "module is %d bytes but at most %d are allowed", len(wasm), p.MaxModuleBytes)
	}
	c := &checker{b: wasm, m: &Module{Size: len(wasm)}}
	if err := c.parse(); err != nil {
		return nil, err
	}
	if err := c.enforce(p); err != nil {
		return c.m, err
	}
	return c.m, nil
}

type checker struct {
	b []byte
	m *Module

	typeParams      []uint32 // parameter count per type
	funcTypes       []uint32 // type index per defined function
	importedGlobals int
	exportNames     map[string]struct{}
	seenName        bool
	seenCode        bool
	maxParams       int
	maxResults      int
	maxBodySize     int
}

func (c *checker) parse() error {
	b := c.b
	if len(b) < 8 {
		return &Error{Offset: 0, Section: "header", Reason: fmt.Sprintf(
			"module is only %d bytes; a WebAssembly binary starts with the 8-byte header 00 61 73 6d 01 00 00 00", len(b))}
	}
	if !bytes.Equal(b[:4], wasmMagic) {
		return &Error{Offset: 0, Section: "header", Reason: fmt.Sprintf(
			"bad magic number % x; not a WebAssembly binary (expected 00 61 73 6d)", b[:4])}
	}
	if !bytes.Equal(b[4:8], wasmVersion1) {
		if bytes.Equal(b[4:8], componentVers) {
			return &Error{Offset: 4, Section: "header", Reason: "this is a WebAssembly component, not a core module; " +
				"only core modules (binary version 1) are supported, build for a core target such as wasm32-wasip1"}
		}
		return &Error{Offset: 4, Section: "header", Reason: fmt.Sprintf(
			"unsupported binary version % x; only core WebAssembly version 1 (01 00 00 00) is supported", b[4:8])}
	}

	r := &reader{b: b, pos: 8, end: len(b)}
	lastRank, lastID := 0, -1
	for r.pos < r.end {
		off := r.pos
		id := int(b[r.pos])
		r.pos++
		if id >= len(sectionNames) {
			r.sec = "unknown"
			why := ""
			if id == 13 {
				why = " (13 is the exception-handling tag section, which is not supported)"
			}
			return r.errf(off, "unknown section id %d%s; core WebAssembly sections are 0..12", id, why)
		}
		name := sectionNames[id]
		r.sec = name
		if id != secCustom {
			if sectionRank[id] == lastRank {
				return r.errf(off, "duplicate %s section", name)
			}
			if sectionRank[id] < lastRank {
				return r.errf(off, "%s section must come before the %s section", name, sectionNames[lastID])
			}
			lastRank, lastID = sectionRank[id], id
		}
		sizeOff := r.pos
		size, err := r.u32("section size")
		if err != nil {
			return err
		}
		if uint64(size) > uint64(r.remaining()) {
			return r.errf(sizeOff, "section size is %d bytes but only %d bytes remain in the module", size, r.remaining())
		}
		s := &reader{b: b, pos: r.pos, end: r.pos + int(size), sec: name}
		r.pos = s.end
		if err := c.section(id, s); err != nil {
			return err
		}
		if s.pos != s.end {
			return s.errf(s.pos, "section content ends %d bytes before the declared section size", s.end-s.pos)
		}
	}
	return c.finish()
}

func (c *checker) section(id int, s *reader) error {
	switch id {
	case secCustom:
		return c.custom(s)
	case secType:
		return c.types(s)
	case secImport:
		return c.imports(s)
	case secFunction:
		return c.functions(s)
	case secTable:
		return c.tables(s)
	case secMemory:
		return c.memories(s)
	case secGlobal:
		return c.globals(s)
	case secExport:
		return c.exports(s)
	case secStart:
		return c.start(s)
	case secElement:
		return c.elements(s)
	case secDataCount:
		return c.dataCount(s)
	case secCode:
		return c.code(s)
	case secData:
		return c.data(s)
	}
	return s.errf(s.pos, "unknown section id %d", id) // unreachable
}

func (c *checker) finish() error {
	if !c.seenCode && len(c.funcTypes) > 0 {
		return &Error{Offset: len(c.b), Section: "code", Reason: fmt.Sprintf(
			"module declares %d functions but has no code section", len(c.funcTypes))}
	}
	if c.m.HasDataCount && c.m.DataCount != uint32(c.m.DataSegments) {
		return &Error{Offset: len(c.b), Section: "data", Reason: fmt.Sprintf(
			"data count section declares %d segments but the data section has %d", c.m.DataCount, c.m.DataSegments)}
	}
	return nil
}
