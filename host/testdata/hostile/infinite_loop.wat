;; An infinite loop. wazero checks the deadline at loop back-edges, so the
;; worker stops it in-process at the deadline.
(module
  (func (export "run") (result i32)
    (loop $forever (br $forever))
    (i32.const 0)))
