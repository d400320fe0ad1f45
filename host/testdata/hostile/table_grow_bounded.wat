;; A table with a declared maximum (accepted): table.grow reaches the maximum,
;; then answers -1, and the module traps.
(module
  (table $t 1 100000 funcref)
  (func (export "run") (result i32)
    (loop $grow
      (br_if $grow (i32.ne (table.grow $t (ref.null func) (i32.const 10000)) (i32.const -1))))
    (drop (table.grow $t (ref.null func) (i32.const 0x7fffffff)))
    unreachable))
