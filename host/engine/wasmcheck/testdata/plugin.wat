;; A small extism-style plugin: host imports, one memory, a bounded table,
;; data segments, globals, an element segment and exported functions.
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (memory (export "memory") 2 16)
  (table 4 4 funcref)
  (global $counter (mut i32) (i32.const 0))
  (global $base i32 (i32.const 1024))
  (data (i32.const 1024) "hello, ")
  (data (i32.const 2048) "world")
  (elem (i32.const 0) $one $two)
  (type $unary (func (result i32)))
  (func $one (result i32) (i32.const 1))
  (func $two (result i32) (i32.const 2))
  (func (export "greet") (result i32)
    (local $n i64) (local $out i64) (local $i i64)
    (local.set $n (call $input_length))
    (local.set $out (call $alloc (local.get $n)))
    (block $done
      (loop $copy
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (call $store_u8
          (i64.add (local.get $out) (local.get $i))
          (call $input_load_u8 (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $copy)))
    (call $output_set (local.get $out) (local.get $n))
    (global.set $counter (i32.add (global.get $counter) (i32.const 1)))
    (i32.add
      (call_indirect (type $unary) (i32.const 0))
      (call_indirect (type $unary) (i32.const 1)))
    (drop)
    (i32.const 0))
  (func (export "count") (result i32) (global.get $counter)))
