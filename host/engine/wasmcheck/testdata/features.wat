;; Exercises the post-MVP encodings wazero enables by default (WebAssembly
;; 2.0): multi-value, block types by index, br_table, sign extension,
;; saturating truncation, bulk memory with a data count section, reference
;; types (typed select, ref.func, table.grow on a table WITH a maximum,
;; passive element segments of expressions) and SIMD. wazero's default
;; configuration compiles it.
(module
  (type $pair (func (param i32) (result i32 i32)))
  (memory (export "memory") 1 2)
  (table $t 2 8 funcref)
  (table $ext 0 4 externref)
  (data $passive "passive bytes")
  (elem $fe funcref (ref.func $swap) (ref.null func))
  (elem declare func $swap)
  (global $g (mut funcref) (ref.null func))
  (global $v v128 (v128.const i32x4 1 2 3 4))
  (func $swap (type $pair) (local.get 0) (local.get 0))
  (func $dispatch (param i32) (result i32)
    (block $a (block $b (block $c
      (br_table $a $b $c (local.get 0)))
      (return (i32.const 3)))
      (return (i32.const 2)))
    (i32.const 1))
  (func (export "run") (param i32) (result i32)
    (local $x i32) (local $f f32) (local $v v128)
    (local.get 0) (block (type $pair) (call $swap)) (drop) (drop)
    (local.set $x (i32.extend8_s (local.get 0)))
    (local.set $x (i32.add (local.get $x) (i32.trunc_sat_f32_s (local.get $f))))
    (memory.init $passive (i32.const 0) (i32.const 0) (i32.const 4))
    (data.drop $passive)
    (memory.copy (i32.const 8) (i32.const 0) (i32.const 4))
    (memory.fill (i32.const 16) (i32.const 255) (i32.const 4))
    (table.init $t $fe (i32.const 0) (i32.const 0) (i32.const 2))
    (elem.drop $fe)
    (drop (table.grow $t (ref.func $swap) (i32.const 1)))
    (drop (table.size $t))
    (global.set $g (ref.func $swap))
    (drop (select (result funcref) (ref.null func) (global.get $g) (local.get 0)))
    (local.set $v (i32x4.add (global.get $v) (v128.load (i32.const 0))))
    (v128.store offset=32 (i32.const 0) (i8x16.shuffle 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 (local.get $v) (local.get $v)))
    (local.set $x (i32.add (local.get $x) (i32x4.extract_lane 2 (local.get $v))))
    (if (result i32) (local.get 0)
      (then (local.get $x))
      (else (call $dispatch (local.get 0))))))
