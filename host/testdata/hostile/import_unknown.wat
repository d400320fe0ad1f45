;; Imports a function no host provides. Refused before compiling.
(module
  (import "env" "system" (func $system (param i32) (result i32)))
  (func (export "run") (result i32) (call $system (i32.const 0))))
