;; Tail calls and atomics on an unshared memory: wazero compiles this only
;; with experimental.CoreFeaturesTailCall|CoreFeaturesThreads; wasmcheck
;; accepts the encodings.
(module
  (memory 1 1)
  (func $f (param i32) (result i32)
    (drop (i32.atomic.rmw.add (i32.const 64) (i32.const 1)))
    (atomic.fence)
    (drop (memory.atomic.notify (i32.const 0) (i32.const 1)))
    (if (result i32) (local.get 0)
      (then (return_call $f (i32.sub (local.get 0) (i32.const 1))))
      (else (i32.atomic.load (i32.const 64)))))
  (export "run" (func $f)))
