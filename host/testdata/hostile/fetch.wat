;; Network through toolhost.http_fetch: forwards its input (the arguments
;; JSON, e.g. {"url": "http://..."}) as the fetch request and fails with the
;; response as its error, so the call's error shows what the host answered
;; (a denial becomes permission_denied).
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "error_set" (func $error_set (param i64)))
  (import "toolhost" "http_fetch" (func $http_fetch (param i64) (result i64)))
  (func (export "fetch") (result i32)
    (local $n i64) (local $p i64) (local $i i64)
    (local.set $n (call $input_length))
    (local.set $p (call $alloc (local.get $n)))
    (block $done
      (loop $copy
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (call $store_u8 (i64.add (local.get $p) (local.get $i)) (call $input_load_u8 (local.get $i)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $copy)))
    (call $error_set (call $http_fetch (local.get $p)))
    (i32.const 1)))
