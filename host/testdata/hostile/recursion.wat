;; Unbounded recursion. wazero grows its call stack by doubling until a fixed
;; limit, then traps with "stack overflow". "run_fat" recurses through a frame
;; with many live locals, which makes each frame (and the stack) larger.
(module
  (func $down (result i32) (call $down))
  (func $fat (param $a i64) (param $b i64) (param $c i64) (param $d i64) (result i64)
    (local $e i64) (local $f i64) (local $g i64) (local $h i64)
    (local.set $e (i64.add (local.get $a) (i64.const 1)))
    (local.set $f (i64.add (local.get $b) (local.get $e)))
    (local.set $g (i64.add (local.get $c) (local.get $f)))
    (local.set $h (i64.add (local.get $d) (local.get $g)))
    (i64.add
      (call $fat (local.get $e) (local.get $f) (local.get $g) (local.get $h))
      (i64.add (i64.add (local.get $e) (local.get $f)) (i64.add (local.get $g) (local.get $h)))))
  (func (export "run") (result i32) (call $down))
  (func (export "run_fat") (result i32)
    (i32.wrap_i64 (call $fat (i64.const 1) (i64.const 2) (i64.const 3) (i64.const 4)))))
