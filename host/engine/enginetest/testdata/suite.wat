;; suite: the module the engine conformance suite (enginetest.Run) calls.
;;   echo        returns its input (the arguments JSON) as its output.
;;   count       adds one to a global and returns it as one JSON digit: "1"
;;               on a fresh instance, "2", "3"… when the instance is reused.
;;   loop        spins forever (stopped at a loop back-edge).
;;   grow        grows memory a page at a time until refused, then traps.
;;   big_output  returns 2 MiB of output.
;;   trap        hits unreachable.
;;
;; Rebuild: wat2wasm suite.wat -o suite.wasm
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 1)
  (global $count (mut i32) (i32.const 0))
  (func (export "echo") (result i32)
    (local $n i64) (local $p i64) (local $i i64)
    (local.set $n (call $input_length))
    (local.set $p (call $alloc (local.get $n)))
    (block $done
      (loop $copy
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (call $store_u8 (i64.add (local.get $p) (local.get $i)) (call $input_load_u8 (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $copy)))
    (call $output_set (local.get $p) (local.get $n))
    (i32.const 0))
  (func (export "count") (result i32)
    (local $p i64)
    (global.set $count (i32.add (global.get $count) (i32.const 1)))
    (local.set $p (call $alloc (i64.const 1)))
    (call $store_u8 (local.get $p) (i32.add (i32.const 48) (i32.rem_u (global.get $count) (i32.const 10))))
    (call $output_set (local.get $p) (i64.const 1))
    (i32.const 0))
  (func (export "loop") (result i32)
    (loop $forever (br $forever))
    (i32.const 0))
  (func (export "grow") (result i32)
    (local $p i32)
    (loop $grow
      (local.set $p (memory.grow (i32.const 1)))
      (if (i32.ne (local.get $p) (i32.const -1))
        (then
          (i32.store (i32.mul (local.get $p) (i32.const 65536)) (i32.const 1))
          (br $grow))))
    unreachable)
  (func (export "big_output") (result i32)
    (local $p i64)
    (local.set $p (call $alloc (i64.const 2097152)))
    (call $store_u8 (local.get $p) (i32.const 120))
    (call $output_set (local.get $p) (i64.const 2097152))
    (i32.const 0))
  (func (export "trap") (result i32) unreachable))
