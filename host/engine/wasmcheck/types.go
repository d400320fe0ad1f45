package wasmcheck

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
