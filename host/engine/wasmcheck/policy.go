package wasmcheck

// Policy says what a module may declare. A zero (or negative) numeric field
// means the package default (Default* constants below); values above the
// fixed implementation limits are clamped to them. The zero Policy is
// therefore usable and strict: default sizes, no imports allowed, no
// required exports.
type Policy struct {
	// MaxModuleBytes bounds len(wasm). Checked before anything is parsed.
	MaxModuleBytes int
	// MaxMemoryPages bounds the declared minimum of the memory and, when the
	// memory declares a maximum, that maximum too (64 KiB pages). A missing
	// maximum is fine: the runtime limit (wazero WithMemoryLimitPages) caps
	// growth.
	MaxMemoryPages uint32
	// MaxTableElements bounds the sum, over all tables, of each table's
	// declared maximum. A table without a maximum is refused if any function
	// uses table.grow; otherwise its size can never exceed its minimum,
	// which then counts as its maximum.
	MaxTableElements uint32
	// MaxElementEntries bounds the total number of entries in all element
	// segments (wazero decodes each into a separate heap object).
	MaxElementEntries int
	// MaxDataBytes bounds the sum of the byte lengths of all data segments.
	MaxDataBytes int
	// MaxFunctions bounds the number of functions defined by the module
	// (imported functions are bounded by MaxImports).
	MaxFunctions int
	// MaxImports bounds the number of imports of any kind.
	MaxImports int
	// MaxTypes bounds the entries of the type section and MaxGlobals the
	// globals defined by the module: wazero keeps ~200 (type) and ~130
	// (global) bytes of heap per entry, from 3-5 bytes of input.
	MaxTypes   int
	MaxGlobals int
	// MaxLocalsPerFunction bounds parameters plus declared locals of any one
	// function. wazero allocates 8 bytes per local at decode time.
	MaxLocalsPerFunction int
	// MaxTotalLocals bounds the declared locals summed over all functions.
	// Locals cost wazero memory (8 bytes each at decode time, ~70 in the
	// interpreter) but almost no input bytes: a 28-byte function can declare
	// 50,000 of them.
	MaxTotalLocals int
	// AllowedImports reports whether the host provides the import
	// module.name. Called for function and global imports only (memory and
	// table imports are always refused). nil allows no imports at all.
	AllowedImports func(module, name string) bool
	// RequiredExports lists names that must be exported as functions.
	RequiredExports []string
}

// Defaults used for zero Policy fields.
const (
	DefaultMaxModuleBytes       = 32 << 20 // 32 MiB
	DefaultMaxMemoryPages       = 4096     // 256 MiB
	DefaultMaxTableElements     = 1 << 18  // 262144 entries (2 MiB in wazero)
	DefaultMaxElementEntries    = 1 << 18
	DefaultMaxDataBytes         = 16 << 20 // 16 MiB
	DefaultMaxFunctions         = 100_000
	DefaultMaxImports           = 1_000
	DefaultMaxTypes             = 50_000
	DefaultMaxGlobals           = 50_000
	DefaultMaxLocalsPerFunction = 50_000  // the JS-API web limit
	DefaultMaxTotalLocals       = 1 << 19 // 524288
)

// Fixed implementation limits, from the WebAssembly JS-API "Limits" section
// (the limits browsers and wasmparser agree on). They keep what wazero
// allocates per declared item bounded even when a policy is generous.
const (
	limitModuleBytes     = 1 << 30
	limitTypes           = 1_000_000
	limitFunctions       = 1_000_000
	limitImports         = 100_000
	limitExports         = 100_000
	limitGlobals         = 1_000_000
	limitTables          = 100_000
	limitElementSegments = 100_000
	limitDataSegments    = 100_000
	limitParams          = 1_000
	limitResults         = 1_000
	limitFunctionBody    = 7_654_321
	limitLocals          = 50_000
	limitTableSize       = 10_000_000
	limitElementEntries  = 10_000_000
	limitMemoryPages     = 65536 // 4 GiB, the wasm32 maximum
)

func (p Policy) withDefaults() Policy {
	intDef := func(v *int, def, limit int) {
		if *v <= 0 {
			*v = def
		}
		if *v > limit {
			*v = limit
		}
	}
	intDef(&p.MaxModuleBytes, DefaultMaxModuleBytes, limitModuleBytes)
	intDef(&p.MaxElementEntries, DefaultMaxElementEntries, limitElementEntries)
	intDef(&p.MaxDataBytes, DefaultMaxDataBytes, limitModuleBytes)
	intDef(&p.MaxFunctions, DefaultMaxFunctions, limitFunctions)
	intDef(&p.MaxImports, DefaultMaxImports, limitImports)
	intDef(&p.MaxTypes, DefaultMaxTypes, limitTypes)
	intDef(&p.MaxGlobals, DefaultMaxGlobals, limitGlobals)
	intDef(&p.MaxLocalsPerFunction, DefaultMaxLocalsPerFunction, limitLocals)
	intDef(&p.MaxTotalLocals, DefaultMaxTotalLocals, limitModuleBytes)
	if p.MaxMemoryPages == 0 {
		p.MaxMemoryPages = DefaultMaxMemoryPages
	}
	if p.MaxMemoryPages > limitMemoryPages {
		p.MaxMemoryPages = limitMemoryPages
	}
	if p.MaxTableElements == 0 {
		p.MaxTableElements = DefaultMaxTableElements
	}
	if p.MaxTableElements > limitTableSize {
		p.MaxTableElements = limitTableSize
	}
	return p
}
