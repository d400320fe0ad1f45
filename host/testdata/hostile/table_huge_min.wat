;; A funcref table declaring ten million elements: wazero would allocate
;; them at instantiation, outside the memory page limit. Refused before
;; compiling.
(module
  (table 10000000 funcref)
  (func (export "run") (result i32) (i32.const 0)))
