;; A plugin that opens a granted file while it initializes, before any
;; call, and reads it from its calls: fd_read is otherwise stateless, but
;; it moves the offset of that descriptor, which no snapshot holds. The
;; start function opens /data/hello.txt; _initialize (which extism runs
;; before the first export, so before the snapshot) opens
;; /data/notes/todo.txt. first and second each read the next byte of
;; their file and return it as their output: a fresh call must always
;; read the file's first byte.
;;
;; Rebuild: wat2wasm initopen.wat -o initopen.wasm
(module
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read"
    (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 1 1)
  (data (i32.const 16) "hello.txt")      ;; 16, 9
  (data (i32.const 32) "notes/todo.txt") ;; 32, 14
  ;; iovec at 64: {buf=128, len=1}
  (data (i32.const 64) "\80\00\00\00\01\00\00\00")
  ;; open opens a file of the grant (fd 3) for reading; its descriptor
  ;; goes to fdAt.
  (func $open (param $path i32) (param $len i32) (param $fdAt i32)
    (drop (call $path_open (i32.const 3) (i32.const 1) (local.get $path) (local.get $len)
      (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (local.get $fdAt))))
  (func $start (call $open (i32.const 16) (i32.const 9) (i32.const 600)))
  (start $start)
  (func (export "_initialize") (call $open (i32.const 32) (i32.const 14) (i32.const 604)))
  (func $next (param $fdAt i32) (result i32) (local $out i64)
    (i32.store8 (i32.const 128) (i32.const 0))
    (drop (call $fd_read (i32.load (local.get $fdAt)) (i32.const 64) (i32.const 1) (i32.const 96)))
    (local.set $out (call $alloc (i64.const 1)))
    (call $store_u8 (local.get $out) (i32.load8_u (i32.const 128)))
    (call $output_set (local.get $out) (i64.const 1))
    (i32.const 0))
  (func (export "first") (result i32) (call $next (i32.const 600)))
  (func (export "second") (result i32) (call $next (i32.const 604))))
