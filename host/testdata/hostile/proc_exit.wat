;; WASI proc_exit in the middle of a call: a non-zero code is a failure, zero
;; is WASI's "success".
(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (func (export "exit_nonzero") (result i32) (call $proc_exit (i32.const 7)) (i32.const 0))
  (func (export "exit_zero") (result i32) (call $proc_exit (i32.const 0)) (i32.const 1)))
