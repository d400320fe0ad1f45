package wasmcheck

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
