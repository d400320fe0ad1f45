;; Output far beyond max_output_bytes.
;;   over_limit:     a 2 MiB output that fits in memory (4 MiB) but not in
;;                   max_output_bytes.
;;   beyond_memory:  asks the host for a 64 MiB output block; the allocation
;;                   fails (0) and the module sets its output to (0, 64 MiB)
;;                   anyway, which the Extism kernel silently ignores.
;;   bad_range:      sets its output to a range outside the kernel's memory.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory 1)
  (func $fill_and_set (param $n i64) (result i32)
    (local $p i64)
    (local.set $p (call $alloc (local.get $n)))
    ;; one byte per 4 KiB page is enough to make it resident
    (call $store_u8 (local.get $p) (i32.const 120))
    (call $output_set (local.get $p) (local.get $n))
    (i32.const 0))
  (func (export "over_limit") (result i32) (call $fill_and_set (i64.const 2097152)))
  (func (export "beyond_memory") (result i32) (call $fill_and_set (i64.const 67108864)))
  (func (export "bad_range") (result i32)
    (call $output_set (i64.const 0x0000ffffffff0000) (i64.const 100))
    (i32.const 0)))
