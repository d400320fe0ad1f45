;; A minimal benign plugin for host tests: "echo" returns its input,
;; "fail" sets an error, "counter" returns how many times this instance ran
;; (always 1: every call gets a fresh instance).
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "error_set" (func $error_set (param i64)))
  (import "extism:host/env" "input_load_u64" (func $input_load_u64 (param i64) (result i64)))
  (import "extism:host/env" "store_u64" (func $store_u64 (param i64 i64)))
  (memory (export "memory") 1 4)
  (global $calls (mut i32) (i32.const 0))
  (data (i32.const 0) "echo refused this input")
  (func $copy_out (param $src i32) (param $n i64)
    (local $out i64) (local $i i64)
    (local.set $out (call $alloc (local.get $n)))
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (call $store_u8 (i64.add (local.get $out) (local.get $i))
          (i32.load8_u (i32.add (local.get $src) (i32.wrap_i64 (local.get $i)))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $next)))
    (call $output_set (local.get $out) (local.get $n)))
  (func (export "echo") (result i32)
    (local $n i64) (local $out i64) (local $i i64)
    (local.set $n (call $input_length))
    (local.set $out (call $alloc (local.get $n)))
    ;; 8 bytes per host call, then the rest byte by byte
    (block $done8
      (loop $next8
        (br_if $done8 (i64.gt_u (i64.add (local.get $i) (i64.const 8)) (local.get $n)))
        (call $store_u64 (i64.add (local.get $out) (local.get $i))
          (call $input_load_u64 (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 8)))
        (br $next8)))
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (call $store_u8 (i64.add (local.get $out) (local.get $i))
          (call $input_load_u8 (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $next)))
    (call $output_set (local.get $out) (local.get $n))
    (i32.const 0))
  (func (export "fail") (result i32)
    (local $out i64) (local $i i64)
    (local.set $out (call $alloc (i64.const 23)))
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $i) (i64.const 23)))
        (call $store_u8 (i64.add (local.get $out) (local.get $i))
          (i32.load8_u (i32.wrap_i64 (local.get $i))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $next)))
    (call $error_set (local.get $out))
    (i32.const 1))
  (func (export "counter") (result i32)
    (global.set $calls (i32.add (global.get $calls) (i32.const 1)))
    ;; write the decimal digit of $calls at address 100 and output it
    (i32.store8 (i32.const 100) (i32.add (i32.const 48) (global.get $calls)))
    (call $copy_out (i32.const 100) (i64.const 1))
    (i32.const 0)))
