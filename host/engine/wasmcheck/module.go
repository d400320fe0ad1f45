package wasmcheck

import "fmt"

// ExternKind is the kind of an import or export.
type ExternKind byte

// Extern kinds as encoded in the binary format.
const (
	KindFunc   ExternKind = 0
	KindTable  ExternKind = 1
	KindMemory ExternKind = 2
	KindGlobal ExternKind = 3
)

func (k ExternKind) String() string {
	switch k {
	case KindFunc:
		return "func"
	case KindTable:
		return "table"
	case KindMemory:
		return "memory"
	case KindGlobal:
		return "global"
	}
	return fmt.Sprintf("kind(%#x)", byte(k))
}

// RefType is a table element type.
type RefType byte

// Reference types.
const (
	FuncRef   RefType = 0x70
	ExternRef RefType = 0x6f
)

func (t RefType) String() string {
	switch t {
	case FuncRef:
		return "funcref"
	case ExternRef:
		return "externref"
	}
	return fmt.Sprintf("reftype(%#x)", byte(t))
}

// Import is one entry of the import section.
type Import struct {
	Module, Name string
	Kind         ExternKind
	// TypeIndex is the function type index (Kind == KindFunc only).
	TypeIndex uint32
}

// Export is one entry of the export section.
type Export struct {
	Name  string
	Kind  ExternKind
	Index uint32
}

// Memory is a memory type (imported or defined). Sizes are in 64 KiB pages.
type Memory struct {
	Min, Max uint64
	HasMax   bool
	Shared   bool // threads proposal
	Memory64 bool // memory64 proposal
	Imported bool
}

// Table is a table type (imported or defined).
type Table struct {
	ElemType RefType
	Min, Max uint32
	HasMax   bool
	Imported bool
}

// Module summarizes what Check read.
type Module struct {
	Size    int // len(wasm)
	Types   int // entries in the type section
	Imports []Import
	Exports []Export
	// Memories and Tables list imported ones first, then defined ones, in
	// index-space order.
	Memories []Memory
	Tables   []Table
	// Functions is the number of functions defined (function section);
	// ImportedFunctions the number imported.
	Functions         int
	ImportedFunctions int
	Globals           int // defined globals
	HasStart          bool
	Start             uint32 // start function index, if HasStart
	ElementSegments   int
	ElementEntries    int
	DataSegments      int
	DataBytes         int64
	HasDataCount      bool
	DataCount         uint32
	CustomSections    []string // names, in order
	// MaxFunctionLocals is the largest params+locals count of one defined
	// function; TotalLocals sums the declared locals of all of them.
	MaxFunctionLocals int
	TotalLocals       int64
	// UsesTableGrow is true if any function body contains table.grow.
	UsesTableGrow bool
	// MutatesTables is true if any function body changes a table
	// (table.set, table.grow, table.fill, table.copy, table.init) or drops
	// an element segment; DropsData if one drops a data segment. Their
	// state outlives a call: an instance that may have changed them
	// cannot be reset from a snapshot of its memories and globals.
	MutatesTables bool
	DropsData     bool
}

// Export returns the export with the given name, if any.
func (m *Module) Export(name string) (Export, bool) {
	for _, e := range m.Exports {
		if e.Name == name {
			return e, true
		}
	}
	return Export{}, false
}
