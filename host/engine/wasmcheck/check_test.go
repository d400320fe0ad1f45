package wasmcheck

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

var allowAll = Policy{AllowedImports: func(string, string) bool { return true }}

func withPolicy(f func(*Policy)) Policy {
	p := allowAll
	f(&p)
	return p
}

type refusal struct {
	name   string
	wasm   []byte
	policy *Policy // nil: allowAll
	want   error   // ErrInvalidModule or ErrPolicy
	rule   Rule    // for ErrPolicy
	substr string  // must appear in the message
}

// bombSection declares bomb entries in section id followed by a few bytes.
func bombSection(id byte) []byte {
	return sec(id, u32(bomb), b(0x60, 0x00, 0x00))
}

func refusals() []refusal {
	pol := func(f func(*Policy)) *Policy { p := withPolicy(f); return &p }
	return []refusal{
		// ---- header ----
		{name: "empty input", wasm: nil, want: ErrInvalidModule, substr: "8-byte header"},
		{name: "bad magic", wasm: b(0x00, 0x61, 0x73, 0x6e, 1, 0, 0, 0), want: ErrInvalidModule, substr: "bad magic"},
		{name: "bad version", wasm: b(0x00, 0x61, 0x73, 0x6d, 2, 0, 0, 0), want: ErrInvalidModule, substr: "unsupported binary version"},
		{name: "component", wasm: b(0x00, 0x61, 0x73, 0x6d, 0x0d, 0, 1, 0), want: ErrInvalidModule, substr: "component"},

		// ---- decoder bombs: a top-level vector count of 2^32-1 in every section kind ----
		{name: "bomb type", wasm: mod(bombSection(1)), want: ErrInvalidModule, substr: "type section at byte 10: declares 4294967295 entries"},
		{name: "bomb import", wasm: mod(bombSection(2)), want: ErrInvalidModule, substr: "import section at byte 10: declares 4294967295 entries"},
		{name: "bomb function", wasm: mod(bombSection(3)), want: ErrInvalidModule, substr: "function section at byte 10: declares 4294967295 entries but only 3 bytes remain"},
		{name: "bomb table", wasm: mod(bombSection(4)), want: ErrInvalidModule, substr: "table section at byte 10: declares 4294967295 entries"},
		{name: "bomb memory", wasm: mod(bombSection(5)), want: ErrInvalidModule, substr: "memory section at byte 10: declares 4294967295 entries"},
		{name: "bomb global", wasm: mod(bombSection(6)), want: ErrInvalidModule, substr: "global section at byte 10: declares 4294967295 entries"},
		{name: "bomb export", wasm: mod(bombSection(7)), want: ErrInvalidModule, substr: "export section at byte 10: declares 4294967295 entries"},
		{name: "bomb element", wasm: mod(bombSection(9)), want: ErrInvalidModule, substr: "element section at byte 10: declares 4294967295 entries"},
		{name: "bomb data", wasm: mod(bombSection(11)), want: ErrInvalidModule, substr: "data section at byte 10: declares 4294967295 entries"},
		{name: "bomb code", wasm: mod(bombSection(10)), want: ErrInvalidModule, substr: "code section at byte 10: declares 4294967295 entries"},
		{name: "bomb data count", wasm: mod(sec(12, u32(bomb))), want: ErrInvalidModule, substr: "data count section declares 4294967295 segments but the data section has 0"},
		{name: "bomb data count vs data", wasm: mod(sec(12, u32(bomb)), sec(11, vec())), want: ErrInvalidModule, substr: "declares 4294967295 segments"},

		// ---- nested bombs ----
		{name: "bomb type params", wasm: mod(sec(1, u32(1), b(0x60), u32(bomb), b(0x7f, 0x00))), want: ErrInvalidModule, substr: "declares 4294967295 parameters"},
		{name: "bomb type results", wasm: mod(sec(1, u32(1), b(0x60, 0x00), u32(bomb), b(0x7f))), want: ErrInvalidModule, substr: "declares 4294967295 results"},
		{name: "bomb import module name", wasm: mod(sec(2, u32(1), u32(bomb), b('e', 'n', 'v'))), want: ErrInvalidModule, substr: "import module name of 4294967295 bytes"},
		{name: "bomb export name", wasm: mod(sec(7, u32(1), u32(bomb), b('r', 0, 0))), want: ErrInvalidModule, substr: "export name of 4294967295 bytes"},
		{name: "bomb custom name", wasm: mod(sec(0, u32(bomb), b('x', 'y'))), want: ErrInvalidModule, substr: "custom section name of 4294967295 bytes"},
		{name: "bomb name section function names", wasm: mod(sec(0, str("name"), b(1), u32(6), u32(bomb), b(0))), want: ErrInvalidModule, substr: `custom "name" section at byte 17: declares 4294967295 function names`},
		{name: "bomb name section local names", wasm: mod(sec(0, str("name"), b(2), u32(8), u32(1), b(0), u32(bomb), b(0))), want: ErrInvalidModule, substr: "declares 4294967295 local names"},
		{name: "name subsection past section", wasm: mod(sec(0, str("name"), b(1), u32(100), b(0))), want: ErrInvalidModule, substr: "subsection 1 of 100 bytes but only 1 bytes remain"},
		{name: "bomb element func indices", wasm: mod(typeVoid, funcOne, sec(4, vec(b(0x70, 0x01, 0x01, 0x01))), sec(9, u32(1), b(0x00, 0x41, 0x00, 0x0b), u32(bomb), b(0)), codeOne), want: ErrInvalidModule, substr: "declares 4294967295 function indices"},
		{name: "bomb element exprs", wasm: mod(sec(9, u32(1), b(0x05, 0x70), u32(bomb), b(0xd0, 0x70, 0x0b))), want: ErrInvalidModule, substr: "declares 4294967295 element expressions"},
		{name: "bomb data segment length", wasm: mod(memOne, sec(11, u32(1), b(0x01), u32(bomb), b(1, 2, 3))), want: ErrInvalidModule, substr: "data segment of 4294967295 bytes but only 3 bytes remain"},
		{name: "bomb code body size", wasm: mod(typeVoid, funcOne, sec(10, u32(1), u32(bomb), b(0x00, 0x0b))), want: ErrInvalidModule, substr: "function body 0 of 4294967295 bytes"},
		{name: "bomb local declarations", wasm: mod(typeVoid, funcOne, sec(10, vec(cat(u32(6), u32(bomb), b(0x0b))))), want: ErrInvalidModule, substr: "declares 4294967295 local declarations"},
		{name: "bomb locals count", wasm: mod(typeVoid, funcOne, sec(10, vec(body(cat(u32(1), u32(bomb), b(0x7e)))))), want: ErrPolicy, rule: RuleLocals, substr: "declares 4294967295 locals"},
		{name: "bomb total locals", wasm: mod(typeVoid, sec(3, vec(b(0), b(0))), sec(10, vec(body(cat(u32(1), u32(40000), b(0x7f))), body(cat(u32(1), u32(40000), b(0x7f)))))), policy: pol(func(p *Policy) { p.MaxTotalLocals = 50000 }), want: ErrPolicy, rule: RuleLocals, substr: "80000 locals in total"},
		{name: "bomb br_table", wasm: oneFunc(body(u32(0), 0x41, 0x00, 0x0e, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00)), want: ErrInvalidModule, substr: "declares 4294967295 br_table labels"},
		{name: "bomb select types", wasm: oneFunc(body(u32(0), 0x1c, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x7f)), want: ErrInvalidModule, substr: "declares 4294967295 select types"},

		// ---- tables ----
		{name: "huge table min", wasm: mod(sec(4, vec(cat(b(0x70, 0x00), u32(1<<27))))), want: ErrPolicy, rule: RuleTableSize, substr: "minimum of 134217728 elements"},
		{name: "huge table max", wasm: mod(sec(4, vec(cat(b(0x70, 0x01, 0x01), u32(bomb))))), want: ErrPolicy, rule: RuleTableSize, substr: "declare a table maximum of at most 262144"},
		{name: "table without max and table.grow", wasm: mod(typeVoid, funcOne, sec(4, vec(b(0x70, 0x00, 0x01))), sec(10, vec(body(u32(0), 0xd0, 0x70, 0x41, 0x01, 0xfc, 0x0f, 0x00, 0x1a)))), want: ErrPolicy, rule: RuleTableMax, substr: "has no maximum size and the module uses table.grow"},
		{name: "tables sum above limit", wasm: mod(sec(4, vec(cat(b(0x70, 0x01, 0x00), u32(200000)), cat(b(0x70, 0x01, 0x00), u32(200000))))), want: ErrPolicy, rule: RuleTableSize, substr: "400000 elements in total"},
		{name: "table max below min", wasm: mod(sec(4, vec(b(0x70, 0x01, 0x05, 0x01)))), want: ErrInvalidModule, substr: "table maximum 1 is below its minimum 5"},
		{name: "shared table", wasm: mod(sec(4, vec(b(0x70, 0x03, 0x01, 0x01)))), want: ErrInvalidModule, substr: "tables cannot be shared"},
		{name: "too many element entries", wasm: mod(typeVoid, funcOne, sec(4, vec(b(0x70, 0x01, 0x01, 0x01))), sec(9, vec(cat(b(0x00, 0x41, 0x00, 0x0b), vec(b(0), b(0), b(0))))), codeOne), policy: pol(func(p *Policy) { p.MaxElementEntries = 2 }), want: ErrPolicy, rule: RuleElementEntries},

		// ---- memories ----
		{name: "memory min above limit", wasm: mod(sec(5, vec(cat(b(0x00), u32(5000))))), want: ErrPolicy, rule: RuleMemoryPages, substr: "minimum of 5000 pages"},
		{name: "memory max above limit", wasm: mod(sec(5, vec(cat(b(0x01, 0x01), u32(65536))))), want: ErrPolicy, rule: RuleMemoryPages, substr: "maximum of 65536 pages (4 GiB)"},
		{name: "memory above wasm32 max", wasm: mod(sec(5, vec(cat(b(0x00), u32(65537))))), want: ErrInvalidModule, substr: "exceeds the wasm32 maximum"},
		{name: "two memories", wasm: mod(sec(5, vec(b(0x00, 0x01), b(0x00, 0x01)))), want: ErrPolicy, rule: RuleMemoryCount, substr: "2 memories"},
		{name: "memory64", wasm: mod(sec(5, vec(b(0x04, 0x01)))), want: ErrPolicy, rule: RuleMemory64},
		{name: "shared memory", wasm: mod(sec(5, vec(b(0x03, 0x01, 0x02)))), want: ErrPolicy, rule: RuleSharedMemory},
		{name: "shared memory without max", wasm: mod(sec(5, vec(b(0x02, 0x01)))), want: ErrInvalidModule, substr: "shared memory must declare a maximum"},
		{name: "memory max below min", wasm: mod(sec(5, vec(b(0x01, 0x02, 0x01)))), want: ErrInvalidModule, substr: "below its minimum"},

		// ---- imports ----
		{name: "disallowed import", wasm: mod(typeVoid, sec(2, vec(cat(str("env"), str("evil"), b(0x00, 0x00))))), policy: pol(func(p *Policy) {
			p.AllowedImports = func(m, n string) bool { return m == "extism:host/env" }
		}), want: ErrPolicy, rule: RuleImportNotAllowed, substr: `import "env"."evil" is not provided by the host`},
		{name: "nil AllowedImports allows none", wasm: mod(typeVoid, sec(2, vec(cat(str("extism:host/env"), str("alloc"), b(0x00, 0x00))))), policy: &Policy{}, want: ErrPolicy, rule: RuleImportNotAllowed, substr: `"extism:host/env"."alloc"`},
		{name: "disallowed global import", wasm: mod(sec(2, vec(cat(str("env"), str("g"), b(0x03, 0x7f, 0x00))))), policy: &Policy{}, want: ErrPolicy, rule: RuleImportNotAllowed, substr: "(global)"},
		{name: "imported memory", wasm: mod(sec(2, vec(cat(str("env"), str("memory"), b(0x02, 0x00, 0x01))))), want: ErrPolicy, rule: RuleImportedMemory},
		{name: "imported table", wasm: mod(sec(2, vec(cat(str("env"), str("table"), b(0x01, 0x70, 0x01, 0x01, 0x01))))), want: ErrPolicy, rule: RuleImportedTable},
		{name: "too many imports", wasm: mod(typeVoid, sec(2, vec(cat(str("a"), str("a"), b(0, 0)), cat(str("a"), str("b"), b(0, 0))))), policy: pol(func(p *Policy) { p.MaxImports = 1 }), want: ErrPolicy, rule: RuleImportCount},
		{name: "tag import", wasm: mod(sec(2, vec(cat(str("env"), str("t"), b(0x04, 0x00, 0x00))))), want: ErrInvalidModule, substr: "exception handling"},
		{name: "import type out of range", wasm: mod(sec(2, vec(cat(str("env"), str("f"), b(0x00, 0x00))))), want: ErrInvalidModule, substr: "the module has 0 types"},

		// ---- exports ----
		{name: "missing required export", wasm: oneFunc(body(u32(0))), policy: pol(func(p *Policy) { p.RequiredExports = []string{"run", "describe"} }), want: ErrPolicy, rule: RuleRequiredExport, substr: `required export "describe" is missing`},
		{name: "required export not a function", wasm: mod(memOne, sec(7, vec(cat(str("run"), b(0x02, 0x00))))), policy: pol(func(p *Policy) { p.RequiredExports = []string{"run"} }), want: ErrPolicy, rule: RuleRequiredExport, substr: "is a memory, not a function"},
		{name: "duplicate export", wasm: mod(typeVoid, funcOne, sec(7, vec(cat(str("run"), b(0, 0)), cat(str("run"), b(0, 0)))), codeOne), want: ErrInvalidModule, substr: `duplicate export name "run"`},
		{name: "export index out of range", wasm: mod(sec(7, vec(cat(str("run"), b(0, 0))))), want: ErrInvalidModule, substr: "refers to func 0 but the module has only 0"},
		{name: "invalid utf-8 export name", wasm: mod(typeVoid, funcOne, sec(7, vec(cat(u32(2), b(0xff, 0xfe), b(0, 0)))), codeOne), want: ErrInvalidModule, substr: "not valid UTF-8"},

		// ---- truncation and sizes ----
		{name: "section size beyond file", wasm: cat(mod(), b(1, 100, 0x01)), want: ErrInvalidModule, substr: "section size is 100 bytes but only 1 bytes remain"},
		{name: "truncated type entry", wasm: mod(sec(1, u32(1), b(0x60, 0x01, 0x7f))), want: ErrInvalidModule, substr: "truncated LEB128 while reading results count"},
		{name: "truncated global", wasm: mod(sec(6, u32(1), b(0x7f, 0x00, 0x41))), want: ErrInvalidModule, substr: "truncated LEB128 while reading i32.const immediate"},
		{name: "truncated memory limits", wasm: mod(sec(5, u32(1), b(0x01, 0x01))), want: ErrInvalidModule, substr: "truncated LEB128 while reading memory maximum"},
		{name: "truncated section size", wasm: cat(mod(), b(1, 0x80)), want: ErrInvalidModule, substr: "truncated LEB128"},
		{name: "trailing bytes in section", wasm: mod(sec(1, vec(b(0x60, 0, 0)), b(0x00))), want: ErrInvalidModule, substr: "ends 1 bytes before the declared section size"},
		{name: "truncated data", wasm: mod(memOne, sec(11, u32(1), b(0x00, 0x41, 0x00, 0x0b), u32(10), b(1, 2))), want: ErrInvalidModule, substr: "data segment of 10 bytes"},
		{name: "module too large", wasm: mod(sec(0, str("pad"), make([]byte, 100))), policy: pol(func(p *Policy) { p.MaxModuleBytes = 64 }), want: ErrPolicy, rule: RuleModuleSize},
		{name: "data bytes above limit", wasm: mod(memOne, sec(11, vec(cat(b(0x01), u32(10), make([]byte, 10))))), policy: pol(func(p *Policy) { p.MaxDataBytes = 9 }), want: ErrPolicy, rule: RuleDataBytes},
		{name: "too many types", wasm: mod(sec(1, vec(b(0x60, 0, 0), b(0x60, 0, 0)))), policy: pol(func(p *Policy) { p.MaxTypes = 1 }), want: ErrPolicy, rule: RuleTypeCount},
		{name: "too many globals", wasm: mod(sec(6, vec(b(0x7f, 0, 0x41, 0, 0x0b), b(0x7f, 0, 0x41, 0, 0x0b)))), policy: pol(func(p *Policy) { p.MaxGlobals = 1 }), want: ErrPolicy, rule: RuleGlobalCount},
		{name: "too many functions", wasm: mod(typeVoid, sec(3, vec(b(0), b(0))), sec(10, vec(body(u32(0)), body(u32(0))))), policy: pol(func(p *Policy) { p.MaxFunctions = 1 }), want: ErrPolicy, rule: RuleFunctionCount},

		// ---- LEB128 ----
		{name: "overlong LEB128", wasm: mod(sec(1, b(0x80, 0x80, 0x80, 0x80, 0x80, 0x00))), want: ErrInvalidModule, substr: "longer than 5 bytes"},
		{name: "LEB128 u32 overflow", wasm: mod(sec(1, b(0xff, 0xff, 0xff, 0xff, 0x1f))), want: ErrInvalidModule, substr: "overflows 32 bits"},
		{name: "LEB128 s32 bad sign bits", wasm: oneFunc(body(u32(0), 0x41, 0xff, 0xff, 0xff, 0xff, 0x4f, 0x1a)), want: ErrInvalidModule, substr: "i32.const immediate overflows"},
		{name: "overlong s64", wasm: oneFunc(body(u32(0), 0x42, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x1a)), want: ErrInvalidModule, substr: "longer than 10 bytes"},

		// ---- section ids and order ----
		{name: "unknown section 13", wasm: mod(sec(13, b(0))), want: ErrInvalidModule, substr: "unknown section id 13"},
		{name: "unknown section 200", wasm: mod(sec(200, b(0))), want: ErrInvalidModule, substr: "unknown section id 200"},
		{name: "out of order", wasm: mod(memOne, typeVoid), want: ErrInvalidModule, substr: "type section must come before the memory section"},
		{name: "duplicate section", wasm: mod(typeVoid, typeVoid), want: ErrInvalidModule, substr: "duplicate type section"},
		{name: "data count after code", wasm: mod(typeVoid, funcOne, codeOne, sec(12, u32(0))), want: ErrInvalidModule, substr: "data count section must come before the code section"},
		{name: "duplicate name section", wasm: mod(sec(0, str("name")), sec(0, str("name"))), want: ErrInvalidModule, substr: `duplicate "name" custom section`},

		// ---- functions and code ----
		{name: "function without code", wasm: mod(typeVoid, funcOne), want: ErrInvalidModule, substr: "no code section"},
		{name: "code count mismatch", wasm: mod(typeVoid, funcOne, sec(10, vec(body(u32(0)), body(u32(0))))), want: ErrInvalidModule, substr: "2 function bodies but the function section declares 1"},
		{name: "body without end", wasm: mod(typeVoid, funcOne, sec(10, vec(cat(u32(2), b(0x00, 0x01))))), want: ErrInvalidModule, substr: "ends before the end opcode"},
		{name: "body continues after end", wasm: mod(typeVoid, funcOne, sec(10, vec(cat(u32(3), b(0x00, 0x0b, 0x01))))), want: ErrInvalidModule, substr: "continues 1 bytes after its final end"},
		{name: "unknown opcode", wasm: oneFunc(body(u32(0), 0xc5)), want: ErrInvalidModule, substr: "unknown opcode 0xc5"},
		{name: "exception handling opcode", wasm: oneFunc(body(u32(0), 0x1f, 0x40, 0x00, 0x0b)), want: ErrInvalidModule, substr: "exception-handling"},
		{name: "GC type", wasm: mod(sec(1, vec(b(0x5f, 0x00, 0x00)))), want: ErrInvalidModule, substr: "GC proposal"},
		{name: "bad constant expression", wasm: mod(sec(6, vec(b(0x7f, 0x00, 0x20, 0x00, 0x0b)))), want: ErrInvalidModule, substr: "opcode 0x20 is not allowed in a constant expression"},
	}
}

func TestRefusals(t *testing.T) {
	for _, tc := range refusals() {
		t.Run(tc.name, func(t *testing.T) {
			p := allowAll
			if tc.policy != nil {
				p = *tc.policy
			}
			m, err := Check(tc.wasm, p)
			if err == nil {
				t.Fatalf("accepted: %+v", m)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %q does not match %v", err, tc.want)
			}
			switch tc.want {
			case ErrInvalidModule:
				var e *Error
				if !errors.As(err, &e) || m != nil {
					t.Fatalf("want *Error and nil module, got %T %v", err, m)
				}
				if e.Offset < 0 || e.Offset > len(tc.wasm) {
					t.Errorf("offset %d outside the module (%d bytes)", e.Offset, len(tc.wasm))
				}
			case ErrPolicy:
				var e *PolicyError
				if !errors.As(err, &e) {
					t.Fatalf("want *PolicyError, got %T", err)
				}
				if tc.rule != "" && e.Rule != tc.rule {
					t.Errorf("rule %q, want %q", e.Rule, tc.rule)
				}
			}
			if !strings.Contains(err.Error(), tc.substr) {
				t.Errorf("error %q does not contain %q", err, tc.substr)
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	_, err := Check(mod(sec(1, u32(bomb), b(0x60, 0x00, 0x00))), allowAll)
	want := "wasmcheck: invalid module: type section at byte 10: declares 4294967295 entries (at least 3 bytes each) but only 3 bytes remain"
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	_, err = Check(mod(typeVoid, sec(2, vec(cat(str("env"), str("evil"), b(0x00, 0x00))))), Policy{})
	want = `wasmcheck: refused by policy: import "env"."evil" is not provided by the host`
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestAcceptsRealModules(t *testing.T) {
	for _, name := range []string{"empty.wasm", "plugin.wasm", "features.wasm", "experimental.wasm", "extism-kernel-v1.7.0.wasm"} {
		t.Run(name, func(t *testing.T) {
			wasm := readTestdata(t, name)
			m, err := Check(wasm, allowAll)
			if err != nil {
				t.Fatal(err)
			}
			if m.Size != len(wasm) {
				t.Errorf("Size %d, want %d", m.Size, len(wasm))
			}
		})
	}
}

func TestPluginSummary(t *testing.T) {
	host := map[string]bool{"input_length": true, "input_load_u8": true, "output_set": true, "alloc": true, "store_u8": true}
	m, err := Check(readTestdata(t, "plugin.wasm"), Policy{
		MaxMemoryPages:   16,
		MaxTableElements: 4,
		AllowedImports:   func(mod, name string) bool { return mod == "extism:host/env" && host[name] },
		RequiredExports:  []string{"greet", "count"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Imports) != 5 || m.Imports[0] != (Import{Module: "extism:host/env", Name: "input_length", Kind: KindFunc, TypeIndex: m.Imports[0].TypeIndex}) {
		t.Errorf("imports: %+v", m.Imports)
	}
	if m.ImportedFunctions != 5 || m.Functions != 4 || m.Globals != 2 {
		t.Errorf("functions %d+%d globals %d", m.ImportedFunctions, m.Functions, m.Globals)
	}
	if len(m.Memories) != 1 || m.Memories[0] != (Memory{Min: 2, Max: 16, HasMax: true}) {
		t.Errorf("memories: %+v", m.Memories)
	}
	if len(m.Tables) != 1 || m.Tables[0] != (Table{ElemType: FuncRef, Min: 4, Max: 4, HasMax: true}) {
		t.Errorf("tables: %+v", m.Tables)
	}
	if m.DataSegments != 2 || m.DataBytes != int64(len("hello, ")+len("world")) {
		t.Errorf("data: %d segments, %d bytes", m.DataSegments, m.DataBytes)
	}
	if m.ElementSegments != 1 || m.ElementEntries != 2 {
		t.Errorf("elements: %d segments, %d entries", m.ElementSegments, m.ElementEntries)
	}
	for _, name := range []string{"greet", "count"} {
		if e, ok := m.Export(name); !ok || e.Kind != KindFunc {
			t.Errorf("export %q: %+v %v", name, e, ok)
		}
	}
	if e, ok := m.Export("memory"); !ok || e.Kind != KindMemory {
		t.Errorf("memory export: %+v %v", e, ok)
	}
	if m.UsesTableGrow {
		t.Error("UsesTableGrow")
	}
	// One page less and the same module is refused.
	_, err = Check(readTestdata(t, "plugin.wasm"), Policy{MaxMemoryPages: 15, AllowedImports: func(string, string) bool { return true }})
	var pe *PolicyError
	if !errors.As(err, &pe) || pe.Rule != RuleMemoryPages {
		t.Errorf("MaxMemoryPages 15: %v", err)
	}
}

func TestFeaturesSummary(t *testing.T) {
	m, err := Check(readTestdata(t, "features.wasm"), allowAll)
	if err != nil {
		t.Fatal(err)
	}
	if !m.UsesTableGrow || len(m.Tables) != 2 || !m.HasDataCount || m.DataCount != 1 || m.ElementSegments != 2 {
		t.Errorf("%+v", m)
	}
	if len(m.CustomSections) != 1 || m.CustomSections[0] != "name" {
		t.Errorf("custom sections %q", m.CustomSections)
	}
}

// A table without a maximum is fine when nothing can grow it: Go's
// wasip1 modules look like this.
func TestTableWithoutMaxNoGrow(t *testing.T) {
	wasm := mod(typeVoid, funcOne, sec(4, vec(b(0x70, 0x00, 0x10))), codeOne)
	m, err := Check(wasm, allowAll)
	if err != nil {
		t.Fatal(err)
	}
	if m.Tables[0].HasMax || m.UsesTableGrow {
		t.Errorf("%+v", m)
	}
	// ... but its minimum still counts against MaxTableElements.
	if _, err := Check(wasm, withPolicy(func(p *Policy) { p.MaxTableElements = 15 })); !errors.Is(err, ErrPolicy) {
		t.Errorf("min 16 > 15: %v", err)
	}
}

func TestTableGrowWithoutMaxTestdata(t *testing.T) {
	m, err := Check(readTestdata(t, "table_grow_nomax.wasm"), allowAll)
	var pe *PolicyError
	if !errors.As(err, &pe) || pe.Rule != RuleTableMax {
		t.Fatalf("got %v", err)
	}
	if m == nil || !m.UsesTableGrow {
		t.Errorf("policy refusal should return the parsed module: %+v", m)
	}
	if !strings.Contains(err.Error(), "declare a table maximum of at most") {
		t.Errorf("message lacks the remedy: %v", err)
	}
}

func TestPaddedLEBAccepted(t *testing.T) {
	// LLVM pads LEB128s to 5 bytes; the spec allows any encoding of at most
	// ceil(32/7) bytes.
	content := cat(b(0x81, 0x80, 0x80, 0x80, 0x00), b(0x60, 0x80, 0x00, 0x00)) // 1 type, params count padded
	wasm := mod(cat(b(1), b(0x80|byte(len(content)), 0x80, 0x80, 0x80, 0x00), content))
	m, err := Check(wasm, allowAll)
	if err != nil {
		t.Fatal(err)
	}
	if m.Types != 1 {
		t.Errorf("types %d", m.Types)
	}
}

func TestCustomSectionsAnywhere(t *testing.T) {
	c := sec(0, str("meta"), b(1, 2, 3))
	wasm := mod(c, typeVoid, c, funcOne, c, exportRun, c, codeOne, c)
	m, err := Check(wasm, allowAll)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.CustomSections) != 5 {
		t.Errorf("custom sections %q", m.CustomSections)
	}
}

func TestNameSectionAccepted(t *testing.T) {
	subsec := func(id byte, content ...[]byte) []byte { return sec(id, content...) }
	names := sec(0, str("name"),
		subsec(0, str("mod1")),
		subsec(1, vec(cat(u32(0), str("run")))),
		subsec(2, vec(cat(u32(0), vec(cat(u32(0), str("x")))))),
		subsec(9, b(0xff, 0xff)), // unknown subsection, skipped by size
	)
	if _, err := Check(mod(typeVoid, funcOne, exportRun, codeOne, names), allowAll); err != nil {
		t.Fatal(err)
	}
}

// Every prefix of a valid module must be handled without panicking and, if
// refused, with one of the two typed errors.
func TestTruncations(t *testing.T) {
	for _, name := range []string{"plugin.wasm", "features.wasm", "extism-kernel-v1.7.0.wasm"} {
		wasm := readTestdata(t, name)
		for n := 0; n < len(wasm); n++ {
			m, err := Check(wasm[:n], allowAll)
			if err := checkResult(m, err); err != nil {
				t.Fatalf("%s[:%d]: %v", name, n, err)
			}
		}
	}
}

// checkResult verifies the contract of Check's results.
func checkResult(m *Module, err error) error {
	var e *Error
	var pe *PolicyError
	switch {
	case err == nil:
		if m == nil {
			return errors.New("nil module without error")
		}
	case errors.As(err, &e):
		if m != nil || !errors.Is(err, ErrInvalidModule) {
			return errors.New("invalid-module error with a module or without ErrInvalidModule")
		}
	case errors.As(err, &pe):
		if !errors.Is(err, ErrPolicy) || pe.Rule == "" || pe.Reason == "" {
			return errors.New("malformed policy error")
		}
	default:
		return errors.New("untyped error: " + err.Error())
	}
	return nil
}

// Check must not allocate more than a small constant factor of the input.
func TestAllocationBound(t *testing.T) {
	inputs := [][]byte{}
	for _, tc := range refusals() {
		inputs = append(inputs, tc.wasm)
	}
	for _, name := range []string{"plugin.wasm", "features.wasm", "extism-kernel-v1.7.0.wasm"} {
		inputs = append(inputs, readTestdata(t, name))
	}
	var before, after runtime.MemStats
	for _, in := range inputs {
		runtime.ReadMemStats(&before)
		_, _ = Check(in, allowAll)
		runtime.ReadMemStats(&after)
		if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(64*len(in)+16<<10); got > limit {
			t.Errorf("Check allocated %d bytes for a %d-byte input (limit %d)", got, len(in), limit)
		}
	}
}

func TestDefaults(t *testing.T) {
	p := Policy{MaxImports: -5, MaxMemoryPages: 1 << 20, MaxTableElements: 1 << 31}.withDefaults()
	if p.MaxImports != DefaultMaxImports || p.MaxMemoryPages != limitMemoryPages || p.MaxTableElements != limitTableSize {
		t.Errorf("%+v", p)
	}
}
