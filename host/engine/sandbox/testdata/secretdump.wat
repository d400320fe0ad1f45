;; secretdump: passes its input, as is, to toolhost.http_fetch, then sets
;; its output to everything it can read: the Extism kernel's memory from 0
;; up to the end of the answer block (the last block allocated), followed
;; by the whole of its own memory. A secret the host added to the request
;; must not show up anywhere in that output.
;;
;; config_units answers the extism config value "units" (empty when unset).
;;
;; Rebuild: wat2wasm secretdump.wat -o secretdump.wasm
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "load_u8" (func $load_u8 (param i64) (result i32)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "config_get" (func $config_get (param i64) (result i64)))
  (import "toolhost" "http_fetch" (func $http_fetch (param i64) (result i64)))

  (memory (export "memory") 1 1)
  (data (i32.const 0) "units")

  (func (export "config_units") (result i32)
    (local $key i64) (local $i i64) (local $v i64)
    (local.set $key (call $alloc (i64.const 5)))
    (block $done (loop $copy
      (br_if $done (i64.ge_u (local.get $i) (i64.const 5)))
      (call $store_u8 (i64.add (local.get $key) (local.get $i))
        (i32.load8_u (i32.wrap_i64 (local.get $i))))
      (local.set $i (i64.add (local.get $i) (i64.const 1)))
      (br $copy)))
    (local.set $v (call $config_get (local.get $key)))
    (if (i64.ne (local.get $v) (i64.const 0))
      (then (call $output_set (local.get $v) (call $length (local.get $v)))))
    (i32.const 0))

  (func (export "fetch_dump") (result i32)
    (local $n i64) (local $req i64) (local $resp i64) (local $end i64)
    (local $out i64) (local $i i64)
    ;; copy the input into a block
    (local.set $n (call $input_length))
    (local.set $req (call $alloc (local.get $n)))
    (local.set $i (i64.const 0))
    (block $done (loop $copy
      (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
      (call $store_u8 (i64.add (local.get $req) (local.get $i))
        (call $input_load_u8 (local.get $i)))
      (local.set $i (i64.add (local.get $i) (i64.const 1)))
      (br $copy)))
    (local.set $resp (call $http_fetch (local.get $req)))
    (local.set $end (i64.add (local.get $resp) (call $length (local.get $resp))))
    ;; output: kernel memory [0, end) then guest memory [0, 65536)
    (local.set $out (call $alloc (i64.add (local.get $end) (i64.const 65536))))
    (local.set $i (i64.const 0))
    (block $done (loop $kernel
      (br_if $done (i64.ge_u (local.get $i) (local.get $end)))
      (call $store_u8 (i64.add (local.get $out) (local.get $i)) (call $load_u8 (local.get $i)))
      (local.set $i (i64.add (local.get $i) (i64.const 1)))
      (br $kernel)))
    (local.set $i (i64.const 0))
    (block $done (loop $guest
      (br_if $done (i64.ge_u (local.get $i) (i64.const 65536)))
      (call $store_u8 (i64.add (i64.add (local.get $out) (local.get $end)) (local.get $i))
        (i32.load8_u (i32.wrap_i64 (local.get $i))))
      (local.set $i (i64.add (local.get $i) (i64.const 1)))
      (br $guest)))
    (call $output_set (local.get $out) (i64.add (local.get $end) (i64.const 65536)))
    (i32.const 0))
)
