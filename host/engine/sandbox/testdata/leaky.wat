;; A module that tries to carry state from one call to the next, for the
;; snapshot tests: leak writes into its data segment, a fresh page and
;; far memory, and sets its mutable globals; peek reads all of them back
;; (0 when nothing survived); grow grows the memory by a page.
(module
  (memory (export "memory") 2 8)
  (data (i32.const 0) "hello")
  (global $count (mut i32) (i32.const 7))
  (global $wide (mut i64) (i64.const -1))
  (global $const i32 (i32.const 5))
  (func (export "leak")
    (i32.store8 (i32.const 0) (i32.const 0x4a))       ;; "hello" -> "Jello"
    (i32.store (i32.const 4096) (i32.const 0xdeadbeef))
    (i32.store (i32.const 131068) (i32.const 0x5ec2e7)) ;; the last word of page 2
    (global.set $count (i32.const 42))
    (global.set $wide (i64.const 42)))
  ;; peek returns a bit per leaked value that is still there.
  (func (export "peek") (result i32)
    (i32.or
      (i32.or
        (i32.ne (i32.load8_u (i32.const 0)) (i32.const 0x68))
        (i32.shl (i32.ne (i32.load (i32.const 4096)) (i32.const 0)) (i32.const 1)))
      (i32.or
        (i32.shl (i32.ne (i32.load (i32.const 131068)) (i32.const 0)) (i32.const 2))
        (i32.or
          (i32.shl (i32.ne (global.get $count) (i32.const 7)) (i32.const 3))
          (i32.shl (i64.ne (global.get $wide) (i64.const -1)) (i32.const 4))))))
  (func (export "grow") (result i32)
    (memory.grow (i32.const 1))))
