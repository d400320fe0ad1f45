package wasmcheck

import "fmt"

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
