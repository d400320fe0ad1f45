;; A table without a maximum plus table.grow: nothing bounds its growth (the
;; memory page limit does not cover tables). Refused before compiling.
(module
  (table $t 1 funcref)
  (func (export "run") (result i32)
    (loop $grow
      (br_if $grow (i32.ne (table.grow $t (ref.null func) (i32.const 100000000)) (i32.const -1))))
    (i32.const 0)))
