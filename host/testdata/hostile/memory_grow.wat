;; memory.grow to the limit and beyond. "grow_loop" grows one page at a time,
;; touching each new page so it is resident, until memory.grow answers -1,
;; then traps the way a language runtime does on allocation failure.
;; "grow_huge" asks for 60 000 pages (3.75 GiB) at once, then traps.
;; "grow_beyond_wasm32" asks for 2^31-1 pages, more than the wasm32 address
;; space, then traps.
(module
  (memory 1)
  (func (export "grow_loop") (result i32)
    (local $p i32)
    (loop $grow
      (local.set $p (memory.grow (i32.const 1)))
      (if (i32.ne (local.get $p) (i32.const -1))
        (then
          (i32.store (i32.mul (local.get $p) (i32.const 65536)) (i32.const 1))
          (br $grow))))
    unreachable)
  (func (export "grow_huge") (result i32)
    (drop (memory.grow (i32.const 60000)))
    unreachable)
  (func (export "grow_beyond_wasm32") (result i32)
    (drop (memory.grow (i32.const 0x7fffffff)))
    unreachable))
