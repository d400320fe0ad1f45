;; Error messages a model, a log or a terminal will show. "escapes" fails with
;; a message holding terminal escape sequences, invalid UTF-8 and a
;; right-to-left override; "huge" fails with a 128 KiB message. The host must
;; pass on a bounded, printable message.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "error_set" (func $error_set (param i64)))
  (memory 1)
  (data (i32.const 0) "\1b[2J\1b[31mboom\1b[0m \ff\fe \e2\80\aegnp.exe\07")
  (func $fail_with (param $src i32) (param $n i64) (param $fill i32) (result i32)
    (local $p i64) (local $i i64)
    (local.set $p (call $alloc (local.get $n)))
    (loop $copy
      (call $store_u8 (i64.add (local.get $p) (local.get $i))
        (if (result i32) (local.get $fill)
          (then (local.get $fill))
          (else (i32.load8_u (i32.add (local.get $src) (i32.wrap_i64 (local.get $i)))))))
      (local.set $i (i64.add (local.get $i) (i64.const 1)))
      (br_if $copy (i64.lt_u (local.get $i) (local.get $n))))
    (call $error_set (local.get $p))
    (i32.const 1))
  (func (export "escapes") (result i32)
    (call $fail_with (i32.const 0) (i64.const 32) (i32.const 0)))
  (func (export "huge") (result i32)
    (call $fail_with (i32.const 0) (i64.const 131072) (i32.const 65))))
