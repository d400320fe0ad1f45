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

// ---- custom sections ----

func (c *checker) custom(s *reader) error {
	name, err := s.name("custom section name")
	if err != nil {
		return err
	}
	c.m.CustomSections = append(c.m.CustomSections, name)
	if name != "name" {
		s.pos = s.end // contents are opaque
		return nil
	}
	// wazero always decodes the "name" section, allocating from its counts.
	s.sec = `custom "name"`
	if c.seenName {
		return s.errf(s.pos, `duplicate "name" custom section`)
	}
	c.seenName = true
	for s.remaining() > 0 {
		id, _ := s.byte1("subsection id")
		off := s.pos
		size, err := s.u32("subsection size")
		if err != nil {
			return err
		}
		sub, err := s.sub(size, s.sec, fmt.Sprintf("subsection %d", id), off)
		if err != nil {
			return err
		}
		switch id {
		case 0: // module name
			if _, err := sub.name("module name"); err != nil {
				return err
			}
		case 1: // function names: vec(idx name)
			if err := nameMap(sub, "function names"); err != nil {
				return err
			}
		case 2: // local names: vec(idx vec(idx name))
			n, err := sub.count("function entries", 2)
			if err != nil {
				return err
			}
			for range n {
				if _, err := sub.u32("function index"); err != nil {
					return err
				}
				if err := nameMap(sub, "local names"); err != nil {
					return err
				}
			}
		default: // other subsections are skipped by size
			sub.pos = sub.end
		}
		if sub.pos != sub.end {
			return sub.errf(sub.pos, "subsection %d content ends %d bytes before its declared size", id, sub.end-sub.pos)
		}
	}
	return nil
}

func nameMap(s *reader, what string) error {
	n, err := s.count(what, 2)
	if err != nil {
		return err
	}
	for range n {
		if _, err := s.u32("index"); err != nil {
			return err
		}
		if _, err := s.name("name"); err != nil {
			return err
		}
	}
	return nil
}

// ---- types ----

func (c *checker) valType(s *reader, what string) error {
	off := s.pos
	t, err := s.byte1(what)
	if err != nil {
		return err
	}
	switch t {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f: // i32 i64 f32 f64 v128 funcref externref
		return nil
	case 0x63, 0x64:
		return s.errf(off, "%s: typed reference type (function-references/GC proposal) is not supported", what)
	case 0x69:
		return s.errf(off, "%s: exnref (exception handling) is not supported", what)
	}
	return s.errf(off, "%s: invalid value type %#x", what, t)
}

func (c *checker) refType(s *reader, what string) (RefType, error) {
	off := s.pos
	t, err := s.byte1(what)
	if err != nil {
		return 0, err
	}
	switch RefType(t) {
	case FuncRef, ExternRef:
		return RefType(t), nil
	}
	if t == 0x63 || t == 0x64 {
		return 0, s.errf(off, "%s: typed reference type (function-references/GC proposal) is not supported", what)
	}
	return 0, s.errf(off, "%s: invalid reference type %#x (expected funcref 0x70 or externref 0x6f)", what, t)
}

func (c *checker) types(s *reader) error {
	n, err := s.count("entries", 3)
	if err != nil {
		return err
	}
	c.m.Types = n
	c.typeParams = make([]uint32, 0, n)
	for range n {
		off := s.pos
		form, err := s.byte1("type form")
		if err != nil {
			return err
		}
		if form != 0x60 {
			switch form {
			case 0x4e, 0x4f, 0x50, 0x5e, 0x5f:
				return s.errf(off, "GC proposal type (form %#x) is not supported", form)
			}
			return s.errf(off, "invalid type form %#x (expected 0x60, a function type)", form)
		}
		params, err := s.count("parameters", 1)
		if err != nil {
			return err
		}
		for range params {
			if err := c.valType(s, "parameter type"); err != nil {
				return err
			}
		}
		results, err := s.count("results", 1)
		if err != nil {
			return err
		}
		for range results {
			if err := c.valType(s, "result type"); err != nil {
				return err
			}
		}
		c.maxParams = max(c.maxParams, params)
		c.maxResults = max(c.maxResults, results)
		c.typeParams = append(c.typeParams, uint32(params))
	}
	return nil
}

func (c *checker) typeIndex(s *reader, what string) (uint32, error) {
	off := s.pos
	idx, err := s.u32(what)
	if err != nil {
		return 0, err
	}
	if uint64(idx) >= uint64(len(c.typeParams)) {
		return 0, s.errf(off, "%s %d is out of range; the module has %d types", what, idx, len(c.typeParams))
	}
	return idx, nil
}

// ---- imports ----

func (c *checker) imports(s *reader) error {
	n, err := s.count("entries", 4)
	if err != nil {
		return err
	}
	c.m.Imports = make([]Import, 0, n)
	for range n {
		var imp Import
		if imp.Module, err = s.name("import module name"); err != nil {
			return err
		}
		if imp.Name, err = s.name("import name"); err != nil {
			return err
		}
		off := s.pos
		kind, err := s.byte1("import kind")
		if err != nil {
			return err
		}
		imp.Kind = ExternKind(kind)
		switch imp.Kind {
		case KindFunc:
			if imp.TypeIndex, err = c.typeIndex(s, "function import type index"); err != nil {
				return err
			}
			c.m.ImportedFunctions++
		case KindTable:
			t, err := c.tableType(s)
			if err != nil {
				return err
			}
			t.Imported = true
			c.m.Tables = append(c.m.Tables, t)
		case KindMemory:
			m, err := c.memType(s)
			if err != nil {
				return err
			}
			m.Imported = true
			c.m.Memories = append(c.m.Memories, m)
		case KindGlobal:
			if err := c.globalType(s); err != nil {
				return err
			}
			c.importedGlobals++
		case 4:
			return s.errf(off, "import %q.%q: tag imports (exception handling) are not supported", imp.Module, imp.Name)
		default:
			return s.errf(off, "import %q.%q: invalid import kind %#x", imp.Module, imp.Name, kind)
		}
		c.m.Imports = append(c.m.Imports, imp)
	}
	return nil
}

func (c *checker) tableType(s *reader) (Table, error) {
	var t Table
	if s.pos < s.end && s.b[s.pos] == 0x40 {
		return t, s.errf(s.pos, "table with an initializer expression (function-references proposal) is not supported")
	}
	var err error
	if t.ElemType, err = c.refType(s, "table element type"); err != nil {
		return t, err
	}
	off := s.pos
	flags, err := s.byte1("table limits flags")
	if err != nil {
		return t, err
	}
	switch flags {
	case 0x00, 0x01:
	case 0x02, 0x03:
		return t, s.errf(off, "tables cannot be shared (limits flags %#x)", flags)
	case 0x04, 0x05:
		return t, s.errf(off, "64-bit tables (memory64 proposal) are not supported")
	default:
		return t, s.errf(off, "invalid table limits flags %#x", flags)
	}
	if t.Min, err = s.u32("table minimum"); err != nil {
		return t, err
	}
	if flags == 0x01 {
		t.HasMax = true
		if t.Max, err = s.u32("table maximum"); err != nil {
			return t, err
		}
		if t.Max < t.Min {
			return t, s.errf(off, "table maximum %d is below its minimum %d", t.Max, t.Min)
		}
	}
	return t, nil
}

func (c *checker) memType(s *reader) (Memory, error) {
	var m Memory
	off := s.pos
	flags, err := s.byte1("memory limits flags")
	if err != nil {
		return m, err
	}
	if flags > 0x07 {
		return m, s.errf(off, "invalid memory limits flags %#x", flags)
	}
	m.HasMax = flags&1 != 0
	m.Shared = flags&2 != 0
	m.Memory64 = flags&4 != 0
	bits := uint(32)
	if m.Memory64 {
		bits = 64
	}
	if m.Min, err = s.leb(bits, false, "memory minimum"); err != nil {
		return m, err
	}
	if m.HasMax {
		if m.Max, err = s.leb(bits, false, "memory maximum"); err != nil {
			return m, err
		}
		if m.Max < m.Min {
			return m, s.errf(off, "memory maximum %d pages is below its minimum %d pages", m.Max, m.Min)
		}
	}
	if !m.Memory64 {
		if m.Min > limitMemoryPages {
			return m, s.errf(off, "memory minimum %d pages exceeds the wasm32 maximum of %d pages (4 GiB)", m.Min, limitMemoryPages)
		}
		if m.HasMax && m.Max > limitMemoryPages {
			return m, s.errf(off, "memory maximum %d pages exceeds the wasm32 maximum of %d pages (4 GiB)", m.Max, limitMemoryPages)
		}
	}
	if m.Shared && !m.HasMax {
		return m, s.errf(off, "shared memory must declare a maximum")
	}
	return m, nil
}

func (c *checker) globalType(s *reader) error {
	if err := c.valType(s, "global type"); err != nil {
		return err
	}
	off := s.pos
	mut, err := s.byte1("global mutability")
	if err != nil {
		return err
	}
	if mut > 1 {
		return s.errf(off, "invalid global mutability %#x (expected 0 or 1)", mut)
	}
	return nil
}

// ---- function, table, memory, global ----

func (c *checker) functions(s *reader) error {
	n, err := s.count("entries", 1)
	if err != nil {
		return err
	}
	c.m.Functions = n
	c.funcTypes = make([]uint32, 0, n)
	for range n {
		idx, err := c.typeIndex(s, "function type index")
		if err != nil {
			return err
		}
		c.funcTypes = append(c.funcTypes, idx)
	}
	return nil
}

func (c *checker) tables(s *reader) error {
	n, err := s.count("entries", 3)
	if err != nil {
		return err
	}
	for range n {
		t, err := c.tableType(s)
		if err != nil {
			return err
		}
		c.m.Tables = append(c.m.Tables, t)
	}
	return nil
}

func (c *checker) memories(s *reader) error {
	n, err := s.count("entries", 2)
	if err != nil {
		return err
	}
	for range n {
		m, err := c.memType(s)
		if err != nil {
			return err
		}
		c.m.Memories = append(c.m.Memories, m)
	}
	return nil
}

func (c *checker) globals(s *reader) error {
	n, err := s.count("entries", 3)
	if err != nil {
		return err
	}
	c.m.Globals = n
	for range n {
		if err := c.globalType(s); err != nil {
			return err
		}
		if err := c.constExpr(s, "global initializer"); err != nil {
			return err
		}
	}
	return nil
}

// constExpr skips a constant expression up to and including its end opcode.
// Every iteration consumes at least one byte, so it terminates within the
// section.
func (c *checker) constExpr(s *reader, what string) error {
	for {
		off := s.pos
		op, err := s.byte1(what)
		if err != nil {
			return err
		}
		switch op {
		case 0x0b: // end
			return nil
		case 0x41: // i32.const
			_, err = s.leb(32, true, "i32.const immediate")
		case 0x42: // i64.const
			_, err = s.leb(64, true, "i64.const immediate")
		case 0x43: // f32.const
			err = s.skip(4, "f32.const immediate")
		case 0x44: // f64.const
			err = s.skip(8, "f64.const immediate")
		case 0x23: // global.get
			_, err = s.u32("global index")
		case 0xd0: // ref.null
			_, err = c.refType(s, "ref.null type")
		case 0xd2: // ref.func
			_, err = s.u32("function index")
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended-const add/sub/mul
		case 0xfd: // v128.const
			var sub uint32
			if sub, err = s.u32("vector opcode"); err == nil {
				if sub != 12 {
					return s.errf(off, "%s: vector opcode 0xfd %d is not allowed in a constant expression", what, sub)
				}
				err = s.skip(16, "v128.const immediate")
			}
		default:
			return s.errf(off, "%s: opcode %#x is not allowed in a constant expression", what, op)
		}
		if err != nil {
			return err
		}
	}
}

// ---- export, start ----

func (c *checker) funcSpace() uint64 { return uint64(c.m.ImportedFunctions) + uint64(len(c.funcTypes)) }

func (c *checker) exports(s *reader) error {
	n, err := s.count("entries", 3)
	if err != nil {
		return err
	}
	c.m.Exports = make([]Export, 0, n)
	c.exportNames = make(map[string]struct{}, n)
	for range n {
		var e Export
		off := s.pos
		if e.Name, err = s.name("export name"); err != nil {
			return err
		}
		if _, dup := c.exportNames[e.Name]; dup {
			return s.errf(off, "duplicate export name %q", e.Name)
		}
		c.exportNames[e.Name] = struct{}{}
		kindOff := s.pos
		kind, err := s.byte1("export kind")
		if err != nil {
			return err
		}
		e.Kind = ExternKind(kind)
		var space uint64
		switch e.Kind {
		case KindFunc:
			space = c.funcSpace()
		case KindTable:
			space = uint64(len(c.m.Tables))
		case KindMemory:
			space = uint64(len(c.m.Memories))
		case KindGlobal:
			space = uint64(c.importedGlobals) + uint64(c.m.Globals)
		case 4:
			return s.errf(kindOff, "export %q: tag exports (exception handling) are not supported", e.Name)
		default:
			return s.errf(kindOff, "export %q: invalid export kind %#x", e.Name, kind)
		}
		idxOff := s.pos
		if e.Index, err = s.u32("export index"); err != nil {
			return err
		}
		if uint64(e.Index) >= space {
			return s.errf(idxOff, "export %q refers to %s %d but the module has only %d", e.Name, e.Kind, e.Index, space)
		}
		c.m.Exports = append(c.m.Exports, e)
	}
	return nil
}

func (c *checker) start(s *reader) error {
	off := s.pos
	idx, err := s.u32("start function index")
	if err != nil {
		return err
	}
	if uint64(idx) >= c.funcSpace() {
		return s.errf(off, "start function %d is out of range; the module has %d functions", idx, c.funcSpace())
	}
	c.m.HasStart, c.m.Start = true, idx
	return nil
}

// ---- element ----

func (c *checker) elements(s *reader) error {
	n, err := s.count("entries", 3)
	if err != nil {
		return err
	}
	c.m.ElementSegments = n
	for range n {
		off := s.pos
		flags, err := s.u32("element segment flags")
		if err != nil {
			return err
		}
		if flags > 7 {
			return s.errf(off, "invalid element segment flags %d (expected 0..7)", flags)
		}
		if flags&3 == 2 { // active with explicit table index
			if _, err := s.u32("table index"); err != nil {
				return err
			}
		}
		if flags&1 == 0 { // active: offset expression
			if err := c.constExpr(s, "element offset"); err != nil {
				return err
			}
		}
		exprs := flags&4 != 0
		if flags&3 != 0 { // explicit elemkind / reftype
			if exprs {
				if _, err := c.refType(s, "element type"); err != nil {
					return err
				}
			} else {
				kOff := s.pos
				k, err := s.byte1("element kind")
				if err != nil {
					return err
				}
				if k != 0 {
					return s.errf(kOff, "invalid element kind %#x (expected 0x00, funcref)", k)
				}
			}
		}
		if exprs {
			m, err := s.count("element expressions", 1)
			if err != nil {
				return err
			}
			for range m {
				if err := c.constExpr(s, "element expression"); err != nil {
					return err
				}
			}
			c.m.ElementEntries += m
		} else {
			m, err := s.count("function indices", 1)
			if err != nil {
				return err
			}
			for range m {
				if _, err := s.u32("function index"); err != nil {
					return err
				}
			}
			c.m.ElementEntries += m
		}
	}
	return nil
}

// ---- data count, code, data ----

func (c *checker) dataCount(s *reader) error {
	v, err := s.u32("data count")
	if err != nil {
		return err
	}
	c.m.HasDataCount, c.m.DataCount = true, v
	return nil
}

func (c *checker) code(s *reader) error {
	c.seenCode = true
	off := s.pos
	n, err := s.count("entries", 3)
	if err != nil {
		return err
	}
	if n != len(c.funcTypes) {
		return s.errf(off, "code section has %d function bodies but the function section declares %d functions", n, len(c.funcTypes))
	}
	for i := range n {
		sizeOff := s.pos
		size, err := s.u32("function body size")
		if err != nil {
			return err
		}
		body, err := s.sub(size, s.sec, fmt.Sprintf("function body %d", i), sizeOff)
		if err != nil {
			return err
		}
		c.maxBodySize = max(c.maxBodySize, int(size))
		decls, err := body.count("local declarations", 2)
		if err != nil {
			return err
		}
		locals := uint64(c.typeParams[c.funcTypes[i]])
		var declared uint64
		for range decls {
			k, err := body.u32("local count")
			if err != nil {
				return err
			}
			if err := c.valType(body, "local type"); err != nil {
				return err
			}
			declared += uint64(k) // at most 2^32 * len(wasm): no overflow
		}
		locals += declared
		c.m.TotalLocals += int64(min(declared, 1<<40))
		c.m.MaxFunctionLocals = int(min(max(uint64(c.m.MaxFunctionLocals), locals), 1<<40))
		if err := c.instructions(body, i); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) data(s *reader) error {
	n, err := s.count("entries", 2)
	if err != nil {
		return err
	}
	c.m.DataSegments = n
	for range n {
		off := s.pos
		flags, err := s.u32("data segment flags")
		if err != nil {
			return err
		}
		switch flags {
		case 0:
			err = c.constExpr(s, "data offset")
		case 1: // passive
		case 2:
			if _, err = s.u32("memory index"); err == nil {
				err = c.constExpr(s, "data offset")
			}
		default:
			return s.errf(off, "invalid data segment flags %d (expected 0, 1 or 2)", flags)
		}
		if err != nil {
			return err
		}
		lenOff := s.pos
		size, err := s.u32("data segment length")
		if err != nil {
			return err
		}
		if uint64(size) > uint64(s.remaining()) {
			return s.errf(lenOff, "data segment of %d bytes but only %d bytes remain", size, s.remaining())
		}
		s.pos += int(size)
		c.m.DataBytes += int64(size)
	}
	return nil
}
