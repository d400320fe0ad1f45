;; Host allocator abuse: asks the Extism kernel for 1 GiB, 4 GiB, 1 TiB and
;; 2^64-1 bytes, a thousand times each, ignoring every failure, then returns
;; success without output.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "free" (func $free (param i64)))
  (func (export "run") (result i32)
    (local $i i32)
    (loop $again
      (call $free (call $alloc (i64.const 0x40000000)))
      (call $free (call $alloc (i64.const 0x100000000)))
      (call $free (call $alloc (i64.const 0x10000000000)))
      (call $free (call $alloc (i64.const -1)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $again (i32.lt_u (local.get $i) (i32.const 1000))))
    (i32.const 0)))
