;; WASI calls, for the snapshot tests: close closes stdout (state a
;; snapshot cannot restore: WASI's descriptor table lives in the host),
;; clock reads the clock (no state).
(module
  (import "wasi_snapshot_preview1" "fd_close" (func $fd_close (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock_time_get (param i32 i64 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "close") (result i32)
    (drop (call $fd_close (i32.const 1)))
    (i32.const 0))
  (func (export "clock") (result i32)
    (drop (call $clock_time_get (i32.const 0) (i64.const 1) (i32.const 64)))
    (i32.const 0)))
