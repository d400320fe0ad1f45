;; A plugin that carries state from one call to the next in its table:
;; leak stores a function reference in slot 0; peek returns 1 as its error
;; code when the reference is still there. Modules that change their
;; tables are not reset to a snapshot; they get a real fresh instance.
(module
  (table $t 1 funcref)
  (func $f)
  (elem declare func $f)
  (func (export "leak") (result i32)
    (table.set $t (i32.const 0) (ref.func $f))
    (i32.const 0))
  (func (export "peek") (result i32)
    (i32.eqz (ref.is_null (table.get $t (i32.const 0))))))
