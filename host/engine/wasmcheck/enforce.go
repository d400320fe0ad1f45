package wasmcheck

import "strconv"

// enforce applies the fixed implementation limits and the policy to a
// module that parsed cleanly.
func (c *checker) enforce(p Policy) error {
	m := c.m

	// Fixed implementation limits (WebAssembly JS-API "Limits").
	for _, l := range []struct {
		what  string
		n     int
		limit int
	}{
		{"exports", len(m.Exports), limitExports},
		{"tables", len(m.Tables), limitTables},
		{"element segments", m.ElementSegments, limitElementSegments},
		{"data segments", m.DataSegments, limitDataSegments},
		{"parameters in one function type", c.maxParams, limitParams},
		{"results in one function type", c.maxResults, limitResults},
		{"bytes in one function body", c.maxBodySize, limitFunctionBody},
	} {
		if l.n > l.limit {
			return refuse(RuleLimit, "module has %d %s; the implementation limit is %d", l.n, l.what, l.limit)
		}
	}

	// Imports.
	if len(m.Imports) > p.MaxImports {
		return refuse(RuleImportCount, "module has %d imports but at most %d are allowed", len(m.Imports), p.MaxImports)
	}
	for _, imp := range m.Imports {
		switch imp.Kind {
		case KindMemory:
			return refuse(RuleImportedMemory, "module imports memory %q.%q; a plugin must define (and may export) its own memory", imp.Module, imp.Name)
		case KindTable:
			return refuse(RuleImportedTable, "module imports table %q.%q; a plugin must define its own tables", imp.Module, imp.Name)
		}
		if p.AllowedImports == nil || !p.AllowedImports(imp.Module, imp.Name) {
			if imp.Kind == KindFunc {
				return refuse(RuleImportNotAllowed, "import %q.%q is not provided by the host", imp.Module, imp.Name)
			}
			return refuse(RuleImportNotAllowed, "import %q.%q (%s) is not provided by the host", imp.Module, imp.Name, imp.Kind)
		}
	}

	// Memory.
	if len(m.Memories) > 1 {
		return refuse(RuleMemoryCount, "module declares %d memories; at most 1 is allowed (multiple memories are not supported)", len(m.Memories))
	}
	for i, mem := range m.Memories {
		if mem.Memory64 {
			return refuse(RuleMemory64, "memory %d is a 64-bit memory (memory64); only 32-bit memories are supported", i)
		}
		if mem.Shared {
			return refuse(RuleSharedMemory, "memory %d is shared (threads proposal); shared memories are not supported", i)
		}
		if mem.Min > uint64(p.MaxMemoryPages) {
			return refuse(RuleMemoryPages, "memory %d declares a minimum of %d pages (%s) but at most %d pages (%s) are allowed; lower the initial memory size",
				i, mem.Min, pagesSize(mem.Min), p.MaxMemoryPages, pagesSize(uint64(p.MaxMemoryPages)))
		}
		if mem.HasMax && mem.Max > uint64(p.MaxMemoryPages) {
			return refuse(RuleMemoryPages, "memory %d declares a maximum of %d pages (%s) but at most %d pages (%s) are allowed; declare a maximum of at most %d pages or none (the host caps growth)",
				i, mem.Max, pagesSize(mem.Max), p.MaxMemoryPages, pagesSize(uint64(p.MaxMemoryPages)), p.MaxMemoryPages)
		}
	}

	// Tables: without a maximum a table can only grow through table.grow,
	// which no memory limit covers.
	var tableTotal uint64
	for i, t := range m.Tables {
		if !t.HasMax && m.UsesTableGrow {
			return refuse(RuleTableMax, "table %d (%s) has no maximum size and the module uses table.grow, which is not bounded by the memory limit; declare a table maximum of at most %d",
				i, t.ElemType, p.MaxTableElements)
		}
		if t.Min > p.MaxTableElements {
			return refuse(RuleTableSize, "table %d (%s) declares a minimum of %d elements but at most %d are allowed",
				i, t.ElemType, t.Min, p.MaxTableElements)
		}
		if t.HasMax && t.Max > p.MaxTableElements {
			return refuse(RuleTableSize, "table %d (%s) declares a maximum of %d elements; declare a table maximum of at most %d",
				i, t.ElemType, t.Max, p.MaxTableElements)
		}
		if t.HasMax {
			tableTotal += uint64(t.Max)
		} else {
			tableTotal += uint64(t.Min)
		}
	}
	if tableTotal > uint64(p.MaxTableElements) {
		return refuse(RuleTableSize, "the %d tables can hold %d elements in total but at most %d are allowed; lower the table maximums",
			len(m.Tables), tableTotal, p.MaxTableElements)
	}
	if m.ElementEntries > p.MaxElementEntries {
		return refuse(RuleElementEntries, "element segments hold %d entries but at most %d are allowed", m.ElementEntries, p.MaxElementEntries)
	}

	// Sizes.
	if m.DataBytes > int64(p.MaxDataBytes) {
		return refuse(RuleDataBytes, "data segments hold %d bytes but at most %d are allowed", m.DataBytes, p.MaxDataBytes)
	}
	if m.Types > p.MaxTypes {
		return refuse(RuleTypeCount, "module has %d types but at most %d are allowed", m.Types, p.MaxTypes)
	}
	if m.Globals > p.MaxGlobals {
		return refuse(RuleGlobalCount, "module defines %d globals but at most %d are allowed", m.Globals, p.MaxGlobals)
	}
	if m.Functions > p.MaxFunctions {
		return refuse(RuleFunctionCount, "module defines %d functions but at most %d are allowed", m.Functions, p.MaxFunctions)
	}
	if m.MaxFunctionLocals > p.MaxLocalsPerFunction {
		return refuse(RuleLocals, "a function declares %d locals (including parameters) but at most %d are allowed per function", m.MaxFunctionLocals, p.MaxLocalsPerFunction)
	}
	if m.TotalLocals > int64(p.MaxTotalLocals) {
		return refuse(RuleLocals, "functions declare %d locals in total but at most %d are allowed", m.TotalLocals, p.MaxTotalLocals)
	}

	// Required exports.
	for _, name := range p.RequiredExports {
		e, ok := m.Export(name)
		if !ok {
			return refuse(RuleRequiredExport, "required export %q is missing; export a function named %q", name, name)
		}
		if e.Kind != KindFunc {
			return refuse(RuleRequiredExport, "required export %q is a %s, not a function", name, e.Kind)
		}
	}
	return nil
}

func pagesSize(pages uint64) string {
	b := pages * 65536
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return strconv.FormatUint(b>>30, 10) + " GiB"
	case b >= 1<<20:
		return strconv.FormatUint(b>>20, 10) + " MiB"
	}
	return strconv.FormatUint(b>>10, 10) + " KiB"
}
