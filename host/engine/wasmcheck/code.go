package wasmcheck

import "fmt"

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

// instructions walks one function body's instruction sequence. It decodes
// every immediate so that it stays in sync with the encoding (an unknown
// opcode is an error, never skipped), tracks block nesting so the body must
// end with the end opcode of the function's outermost block exactly at its
// last byte, and records table.grow. It allocates nothing.
func (c *checker) instructions(s *reader, fn int) error {
	depth := 0
	for {
		if s.pos >= s.end {
			return s.errf(s.pos, "function body %d ends before the end opcode of its outermost block", fn)
		}
		off := s.pos
		op := s.b[s.pos]
		s.pos++
		var err error
		switch {
		case op == 0x0b: // end
			if depth == 0 {
				if s.pos != s.end {
					return s.errf(off, "function body %d continues %d bytes after its final end opcode", fn, s.end-s.pos)
				}
				return nil
			}
			depth--
		case op == 0x02 || op == 0x03 || op == 0x04: // block loop if
			err = c.blockType(s)
			depth++
		case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0f || op == 0x1a || op == 0x1b || op == 0xd1:
			// unreachable nop else return drop select ref.is_null
		case op == 0x0c || op == 0x0d: // br br_if
			_, err = s.u32("label index")
		case op == 0x0e: // br_table
			var n int
			if n, err = s.count("br_table labels", 1); err == nil {
				for i := 0; i <= n && err == nil; i++ { // n labels + default
					_, err = s.u32("label index")
				}
			}
		case op == 0x10 || op == 0x12: // call return_call
			_, err = s.u32("function index")
		case op == 0x11 || op == 0x13: // call_indirect return_call_indirect
			if _, err = s.u32("type index"); err == nil {
				_, err = s.u32("table index")
			}
		case op == 0x1c: // select t*
			var n int
			if n, err = s.count("select types", 1); err == nil {
				for i := 0; i < n && err == nil; i++ {
					err = c.valType(s, "select type")
				}
			}
		case op >= 0x20 && op <= 0x26: // local.get/set/tee global.get/set table.get/set
			if op == 0x26 {
				c.m.MutatesTables = true
			}
			_, err = s.u32("index")
		case op >= 0x28 && op <= 0x3e: // loads and stores
			err = memArg(s)
		case op == 0x3f || op == 0x40: // memory.size memory.grow
			_, err = s.u32("memory index")
		case op == 0x41:
			_, err = s.leb(32, true, "i32.const immediate")
		case op == 0x42:
			_, err = s.leb(64, true, "i64.const immediate")
		case op == 0x43:
			err = s.skip(4, "f32.const immediate")
		case op == 0x44:
			err = s.skip(8, "f64.const immediate")
		case op >= 0x45 && op <= 0xc4: // numeric and sign-extension, no immediates
		case op == 0xd0: // ref.null
			_, err = c.refType(s, "ref.null type")
		case op == 0xd2: // ref.func
			_, err = s.u32("function index")
		case op == 0xfc:
			err = c.prefixFC(s, off)
		case op == 0xfd:
			err = simd(s, off)
		case op == 0xfe:
			err = atomic(s, off)
		case op >= 0x06 && op <= 0x0a, op == 0x18, op == 0x19, op == 0x1f:
			return s.errf(off, "function body %d: exception-handling instruction %#x is not supported", fn, op)
		case op == 0x14 || op == 0x15 || (op >= 0xd3 && op <= 0xd6):
			return s.errf(off, "function body %d: typed function references instruction %#x is not supported", fn, op)
		case op == 0xfb:
			return s.errf(off, "function body %d: GC instructions (0xfb prefix) are not supported", fn)
		default:
			return s.errf(off, "function body %d: unknown opcode %#x", fn, op)
		}
		if err != nil {
			return err
		}
	}
}

func (c *checker) blockType(s *reader) error {
	if s.pos >= s.end {
		return s.truncated("block type")
	}
	switch b := s.b[s.pos]; b {
	case 0x40, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f: // empty or a value type
		s.pos++
		return nil
	case 0x63, 0x64:
		return s.errf(s.pos, "block type: typed reference type (function-references/GC proposal) is not supported")
	}
	off := s.pos
	v, err := s.leb(33, true, "block type index")
	if err != nil {
		return err
	}
	if int64(v) < 0 {
		return s.errf(off, "invalid block type %d", int64(v))
	}
	if v >= uint64(len(c.typeParams)) {
		return s.errf(off, "block type index %d is out of range; the module has %d types", v, len(c.typeParams))
	}
	return nil
}

func memArg(s *reader) error {
	align, err := s.u32("memarg alignment")
	if err != nil {
		return err
	}
	if align&0x40 != 0 { // multi-memory: explicit memory index
		if _, err := s.u32("memarg memory index"); err != nil {
			return err
		}
	}
	_, err = s.u64("memarg offset")
	return err
}

func (c *checker) prefixFC(s *reader, off int) error {
	sub, err := s.u32("0xfc sub-opcode")
	if err != nil {
		return err
	}
	n := 0 // number of u32 immediates
	switch sub {
	case 9: // data.drop
		c.m.DropsData = true
	case 12, 13, 14, 15, 17: // table.init elem.drop table.copy table.grow table.fill
		c.m.MutatesTables = true
	}
	switch {
	case sub <= 7: // saturating truncations
	case sub == 8, sub == 10, sub == 12, sub == 14: // memory.init memory.copy table.init table.copy
		n = 2
	case sub == 9, sub == 11, sub == 13, sub == 16, sub == 17: // data.drop memory.fill elem.drop table.size table.fill
		n = 1
	case sub == 15: // table.grow
		c.m.UsesTableGrow = true
		n = 1
	default:
		return s.errf(off, "unknown opcode 0xfc %d", sub)
	}
	for range n {
		if _, err := s.u32("immediate"); err != nil {
			return err
		}
	}
	return nil
}

func simd(s *reader, off int) error {
	sub, err := s.u32("0xfd sub-opcode")
	if err != nil {
		return err
	}
	switch {
	case sub <= 0x0b, sub == 0x5c, sub == 0x5d: // loads, stores, load*_zero
		return memArg(s)
	case sub == 0x0c, sub == 0x0d: // v128.const, i8x16.shuffle
		return s.skip(16, "v128 immediate")
	case sub >= 0x15 && sub <= 0x22: // extract/replace lane
		return s.skip(1, "lane index")
	case sub >= 0x54 && sub <= 0x5b: // load/store lane
		if err := memArg(s); err != nil {
			return err
		}
		return s.skip(1, "lane index")
	case sub <= 0xff: // everything else in the SIMD space has no immediates
		return nil
	}
	return s.errf(off, "unsupported vector opcode 0xfd %d (relaxed SIMD is not supported)", sub)
}

func atomic(s *reader, off int) error {
	sub, err := s.u32("0xfe sub-opcode")
	if err != nil {
		return err
	}
	switch {
	case sub == 0x03: // atomic.fence
		b, err := s.byte1("atomic.fence immediate")
		if err == nil && b != 0 {
			return s.errf(off, "atomic.fence immediate must be 0")
		}
		return err
	case sub <= 0x02, sub >= 0x10 && sub <= 0x4e:
		return memArg(s)
	}
	return s.errf(off, "unknown opcode 0xfe %d", sub)
}
