;; start_spin: a module whose start function never returns. Instantiating it
;; (which every fresh call does) spins until the deadline stops it at a loop
;; back-edge.
;;
;; Rebuild: wat2wasm start_spin.wat -o start_spin.wasm
(module
  (memory (export "memory") 1)
  (func $spin (loop $forever (br $forever)))
  (start $spin)
  (func (export "run") (result i32) (i32.const 0)))
