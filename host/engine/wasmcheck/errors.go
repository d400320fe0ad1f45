package wasmcheck

import (
	"errors"
	"fmt"
)

// ErrInvalidModule is matched (errors.Is) by every error reporting a
// malformed or unsupported binary.
var ErrInvalidModule = errors.New("wasmcheck: invalid module")

// ErrPolicy is matched (errors.Is) by every error reporting a well-formed
// module that the Policy refuses.
var ErrPolicy = errors.New("wasmcheck: refused by policy")

// Error reports a malformed (or unsupported) module. It unwraps to
// ErrInvalidModule.
type Error struct {
	// Offset is the byte offset in the module where the problem was found.
	Offset int
	// Section names the section being read: "header", "type", "import",
	// "function", "table", "memory", "global", "export", "start",
	// "element", "data count", "code", "data", or `custom "name"`.
	Section string
	// Reason says what is wrong.
	Reason string
}

func (e *Error) Error() string {
	where := e.Section + " section"
	if e.Section == "header" {
		where = "module header"
	}
	return fmt.Sprintf("%v: %s at byte %d: %s", ErrInvalidModule, where, e.Offset, e.Reason)
}

// Unwrap returns ErrInvalidModule.
func (e *Error) Unwrap() error { return ErrInvalidModule }

// Rule identifies which policy rule refused a module.
type Rule string

// Policy rules reported in PolicyError.Rule.
const (
	RuleModuleSize       Rule = "module-size"        // len(wasm) > MaxModuleBytes
	RuleImportCount      Rule = "import-count"       // more imports than MaxImports
	RuleImportNotAllowed Rule = "import-not-allowed" // AllowedImports said no (or is nil)
	RuleImportedMemory   Rule = "imported-memory"    // memory must be defined by the module
	RuleImportedTable    Rule = "imported-table"     // tables must be defined by the module
	RuleMemoryCount      Rule = "memory-count"       // more than one memory
	RuleMemory64         Rule = "memory64"           // 64-bit memory
	RuleSharedMemory     Rule = "shared-memory"      // threads proposal shared memory
	RuleMemoryPages      Rule = "memory-pages"       // min or max above MaxMemoryPages
	RuleTableMax         Rule = "table-max"          // table without maximum in a module using table.grow
	RuleTableSize        Rule = "table-size"         // table min/max (sum) above MaxTableElements
	RuleElementEntries   Rule = "element-entries"    // element segment entries above MaxElementEntries
	RuleDataBytes        Rule = "data-bytes"         // data segment bytes above MaxDataBytes
	RuleFunctionCount    Rule = "function-count"     // defined functions above MaxFunctions
	RuleTypeCount        Rule = "type-count"         // types above MaxTypes
	RuleGlobalCount      Rule = "global-count"       // defined globals above MaxGlobals
	RuleLocals           Rule = "locals"             // locals per function / in total above the limits
	RuleRequiredExport   Rule = "required-export"    // a RequiredExports name is missing or not a function
	RuleLimit            Rule = "implementation-limit"
)

// PolicyError reports a well-formed module refused by the Policy (or by one
// of the fixed implementation limits, Rule == RuleLimit). It unwraps to
// ErrPolicy.
type PolicyError struct {
	Rule Rule
	// Reason says what is refused and, where useful, what to change.
	Reason string
}

func (e *PolicyError) Error() string { return fmt.Sprintf("%v: %s", ErrPolicy, e.Reason) }

// Unwrap returns ErrPolicy.
func (e *PolicyError) Unwrap() error { return ErrPolicy }

func refuse(rule Rule, format string, args ...any) *PolicyError {
	return &PolicyError{Rule: rule, Reason: fmt.Sprintf(format, args...)}
}
