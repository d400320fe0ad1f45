;; A plugin whose error messages read like the engine's own verdicts:
;; fail writes "out of memory" to stderr, sets its error (error_set) to
;; its input and returns 1. Whatever the words, the call is the tool's
;; own failure: plugin_error with its message.
;;
;; Rebuild: wat2wasm guesterror.wat -o guesterror.wasm
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "error_set" (func $error_set (param i64)))
  (memory (export "memory") 1 1)
  (data (i32.const 16) "fatal error: out of memory\n") ;; 16, 27
  (data (i32.const 64) "\10\00\00\00\1b\00\00\00")     ;; iovec {16, 27}
  (func (export "fail") (result i32) (local $n i64) (local $k i64) (local $i i64)
    (drop (call $fd_write (i32.const 2) (i32.const 64) (i32.const 1) (i32.const 96)))
    (local.set $n (call $input_length))
    (local.set $k (call $alloc (local.get $n)))
    (block $done (loop $copy
      (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
      (call $store_u8 (i64.add (local.get $k) (local.get $i)) (call $input_load_u8 (local.get $i)))
      (local.set $i (i64.add (local.get $i) (i64.const 1)))
      (br $copy)))
    (call $error_set (local.get $k))
    (i32.const 1)))
