package wasmcheck

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
