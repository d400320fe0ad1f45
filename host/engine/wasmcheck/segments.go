package wasmcheck

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

func (c *checker) dataCount(s *reader) error {
	v, err := s.u32("data count")
	if err != nil {
		return err
	}
	c.m.HasDataCount, c.m.DataCount = true, v
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
