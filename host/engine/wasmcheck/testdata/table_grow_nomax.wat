;; A table without a maximum plus table.grow: refused by the policy because
;; table.grow is not bounded by the memory page limit.
(module
  (table $t 1 funcref)
  (memory 1)
  (func (export "run") (result i32)
    (table.grow $t (ref.null func) (i32.const 1000000))))
