;; suite: the module the engine conformance suite (enginetest.Run) calls.
;;   echo        returns its input (the arguments JSON) as its output.
;;   count       adds one to a global and returns it as one JSON digit: "1"
;;               on a fresh instance, "2", "3"… when the instance is reused.
;;   loop        spins forever (stopped at a loop back-edge).
;;   busy        counts to 2^30 (about a second of CPU), then returns "ok".
;;   grow        grows memory a page at a time until refused, then traps.
;;   big_output  returns 2 MiB of output.
;;   trap        hits unreachable.
;;   events      logs "debug line" (debug), "hello" (info), "warned" (warn),
;;               then reports progress 1/3 "one", 2/3, 3/3 "done" at once.
;;   log_flood   logs 300 info lines of 1504 bytes ("xxx…").
;;   fill        grows memory a page at a time until refused, writing every
;;               4 KiB of each new page (all of it resident), then spins
;;               until it is stopped: memory held as long as it runs.
;;   fill_mib    grows memory by 16 pages (1 MiB), writes every 4 KiB of
;;               them, then returns "ok".
;;
;; Rebuild: wat2wasm suite.wat -o suite.wasm
(module
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "store_u64" (func $store_u64 (param i64 i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "log_debug" (func $log_debug (param i64)))
  (import "extism:host/env" "log_info" (func $log_info (param i64)))
  (import "extism:host/env" "log_warn" (func $log_warn (param i64)))
  (import "toolhost" "progress" (func $progress (param f64 f64 i64)))
  (memory (export "memory") 1)
  (data (i32.const 0) "debug line")
  (data (i32.const 16) "hello")
  (data (i32.const 32) "warned")
  (data (i32.const 48) "one")
  (data (i32.const 64) "done")
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
  (func (export "busy") (result i32)
    (local $i i32) (local $p i64)
    (loop $count
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $count (i32.lt_u (local.get $i) (i32.const 1073741824))))
    (local.set $p (call $alloc (i64.const 2)))
    (call $store_u8 (local.get $p) (i32.const 111))
    (call $store_u8 (i64.add (local.get $p) (i64.const 1)) (i32.const 107))
    (call $output_set (local.get $p) (i64.const 2))
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
  ;; $touch writes one word in every 4 KiB of the 64 KiB page at index $page.
  (func $touch (param $page i32)
    (local $a i32) (local $end i32)
    (local.set $a (i32.mul (local.get $page) (i32.const 65536)))
    (local.set $end (i32.add (local.get $a) (i32.const 65536)))
    (loop $next
      (i32.store (local.get $a) (i32.const 1))
      (local.set $a (i32.add (local.get $a) (i32.const 4096)))
      (br_if $next (i32.lt_u (local.get $a) (local.get $end)))))
  (func (export "fill") (result i32)
    (local $p i32)
    (loop $grow
      (local.set $p (memory.grow (i32.const 1)))
      (if (i32.ne (local.get $p) (i32.const -1))
        (then
          (call $touch (local.get $p))
          (br $grow))))
    (loop $forever (br $forever))
    (i32.const 0))
  (func (export "fill_mib") (result i32)
    (local $p i32) (local $end i32) (local $out i64)
    (local.set $p (memory.grow (i32.const 16)))
    (if (i32.eq (local.get $p) (i32.const -1)) (then unreachable))
    (local.set $end (i32.add (local.get $p) (i32.const 16)))
    (loop $pages
      (call $touch (local.get $p))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br_if $pages (i32.lt_u (local.get $p) (local.get $end))))
    (local.set $out (call $alloc (i64.const 2)))
    (call $store_u8 (local.get $out) (i32.const 111))
    (call $store_u8 (i64.add (local.get $out) (i64.const 1)) (i32.const 107))
    (call $output_set (local.get $out) (i64.const 2))
    (i32.const 0))
  (func (export "big_output") (result i32)
    (local $p i64)
    (local.set $p (call $alloc (i64.const 2097152)))
    (call $store_u8 (local.get $p) (i32.const 120))
    (call $output_set (local.get $p) (i64.const 2097152))
    (i32.const 0))
  (func (export "trap") (result i32) unreachable)
  ;; $block copies n bytes of this module's memory at ptr into a new Extism
  ;; block and returns its offset.
  (func $block (param $ptr i32) (param $n i64) (result i64)
    (local $p i64) (local $i i64)
    (local.set $p (call $alloc (local.get $n)))
    (block $done
      (loop $copy
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (call $store_u8 (i64.add (local.get $p) (local.get $i))
          (i32.load8_u (i32.add (local.get $ptr) (i32.wrap_i64 (local.get $i)))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (br $copy)))
    (local.get $p))
  ;; $xs returns a new Extism block of n (a multiple of 8) bytes of "x".
  (func $xs (param $n i64) (result i64)
    (local $p i64) (local $i i64)
    (local.set $p (call $alloc (local.get $n)))
    (block $done
      (loop $fill
        (br_if $done (i64.ge_u (local.get $i) (local.get $n)))
        (call $store_u64 (i64.add (local.get $p) (local.get $i)) (i64.const 0x7878787878787878))
        (local.set $i (i64.add (local.get $i) (i64.const 8)))
        (br $fill)))
    (local.get $p))
  (func (export "events") (result i32)
    (call $log_debug (call $block (i32.const 0) (i64.const 10)))
    (call $log_info (call $block (i32.const 16) (i64.const 5)))
    (call $log_warn (call $block (i32.const 32) (i64.const 6)))
    (call $progress (f64.const 1) (f64.const 3) (call $block (i32.const 48) (i64.const 3)))
    (call $progress (f64.const 2) (f64.const 3) (i64.const 0))
    (call $progress (f64.const 3) (f64.const 3) (call $block (i32.const 64) (i64.const 4)))
    (i32.const 0))
  (func (export "log_flood") (result i32)
    (local $i i32)
    (block $done
      (loop $lines
        (br_if $done (i32.ge_u (local.get $i) (i32.const 300)))
        (call $log_info (call $xs (i64.const 1504)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $lines)))
    (i32.const 0)))
