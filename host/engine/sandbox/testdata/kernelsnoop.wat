;; Tries to pass data from one call to the next through the Extism
;; kernel's memory: plant writes "SECRET!!" with store_u64 at 0x8000, past
;; anything allocated (the kernel's reset zeroes only what it allocated,
;; and store_u64 checks only that the offset is inside the memory); snoop
;; scans the first 64 KiB of the kernel's memory (its heap starts there)
;; with load_u64 at every offset for those bytes and returns 1 as its
;; output's only byte when it finds them, else 0. Call snoop with an
;; empty input (it would find its own).
(module
  (import "extism:host/env" "load_u64" (func $load_u64 (param i64) (result i64)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "store_u64" (func $store_u64 (param i64 i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 1)
  (func (export "plant") (result i32)
    (call $store_u64 (i64.const 0x8000) (i64.const 0x2121544552434553))
    (i32.const 0))
  (func (export "snoop") (result i32)
    (local $off i64) (local $found i32) (local $out i64)
    (local.set $off (i64.const 0))
    (block $done
      (loop $next
        (br_if $done (i64.ge_u (local.get $off) (i64.const 0xfff8)))
        (if (i64.eq (call $load_u64 (local.get $off)) (i64.const 0x2121544552434553)) ;; "SECRET!!"
          (then (local.set $found (i32.const 1)) (br $done)))
        (local.set $off (i64.add (local.get $off) (i64.const 1)))
        (br $next)))
    (local.set $out (call $alloc (i64.const 1)))
    (call $store_u8 (local.get $out) (local.get $found))
    (call $output_set (local.get $out) (i64.const 1))
    (i32.const 0)))
