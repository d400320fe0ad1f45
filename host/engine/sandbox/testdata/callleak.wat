;; A plugin that tries to carry state from one call to the next through
;; every place an instance holds it, for the tests that run fresh calls
;; through Module.Call (snapshot resets): leak writes its data segment, a
;; fresh page, the last page and both mutable globals; grow grows the
;; memory (a reset must then refuse); closeout closes stdout (WASI state
;; a snapshot does not hold); setvar sets an Extism variable. peek returns
;; a bit per leaked value still there (0 when nothing survived), as its
;; error code: 1 data, 2 page, 4 last page, 8 i32 global, 16 i64 global,
;; 32 memory size, 64 stdout closed, 128 variable set.
(module
  (import "wasi_snapshot_preview1" "fd_close" (func $fd_close (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_fdstat_get" (func $fd_fdstat_get (param i32 i32) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "var_set" (func $var_set (param i64 i64)))
  (import "extism:host/env" "var_get" (func $var_get (param i64) (result i64)))
  (memory (export "memory") 2 8)
  (data (i32.const 0) "hello")
  (global $count (mut i32) (i32.const 7))
  (global $wide (mut i64) (i64.const -1))
  (func (export "leak") (result i32)
    (i32.store8 (i32.const 0) (i32.const 0x4a))
    (i32.store (i32.const 4096) (i32.const 0xdeadbeef))
    (i32.store (i32.const 131068) (i32.const 0x5ec2e7))
    (global.set $count (i32.const 42))
    (global.set $wide (i64.const 42))
    (i32.const 0))
  (func (export "grow") (result i32)
    (drop (memory.grow (i32.const 1)))
    (i32.const 0))
  (func (export "closeout") (result i32)
    (drop (call $fd_close (i32.const 1)))
    (i32.const 0))
  ;; key returns a one-byte name "k" in the kernel's memory.
  (func $key (result i64) (local $k i64)
    (local.set $k (call $alloc (i64.const 1)))
    (call $store_u8 (local.get $k) (i32.const 0x6b))
    (local.get $k))
  (func (export "setvar") (result i32) (local $v i64)
    (local.set $v (call $alloc (i64.const 1)))
    (call $store_u8 (local.get $v) (i32.const 1))
    (call $var_set (call $key) (local.get $v))
    (i32.const 0))
  (func (export "peek") (result i32)
    (i32.or
      (i32.or
        (i32.or
          (i32.ne (i32.load8_u (i32.const 0)) (i32.const 0x68))
          (i32.shl (i32.ne (i32.load (i32.const 4096)) (i32.const 0)) (i32.const 1)))
        (i32.or
          (i32.shl (i32.ne (i32.load (i32.const 131068)) (i32.const 0)) (i32.const 2))
          (i32.or
            (i32.shl (i32.ne (global.get $count) (i32.const 7)) (i32.const 3))
            (i32.shl (i64.ne (global.get $wide) (i64.const -1)) (i32.const 4)))))
      (i32.or
        (i32.or
          (i32.shl (i32.ne (memory.size) (i32.const 2)) (i32.const 5))
          (i32.shl (i32.ne (call $fd_fdstat_get (i32.const 1) (i32.const 8192)) (i32.const 0)) (i32.const 6)))
        (i32.shl (i64.ne (call $var_get (call $key)) (i64.const 0)) (i32.const 7))))))
