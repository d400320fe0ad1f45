;; Traps: each export fails in a different way.
(module
  (type $v (func (result i32)))
  (table 1 1 funcref)
  (memory 1)
  (func (export "unreachable") (result i32) unreachable)
  (func (export "div_zero") (result i32) (i32.div_s (i32.const 1) (i32.const 0)))
  (func (export "int_overflow") (result i32) (i32.div_s (i32.const 0x80000000) (i32.const -1)))
  (func (export "bad_conversion") (result i32) (i32.trunc_f32_s (f32.const nan)))
  (func (export "oob_load") (result i32) (i32.load (i32.const 0xfffffff0)))
  (func (export "null_call") (result i32) (call_indirect (type $v) (i32.const 0))))
