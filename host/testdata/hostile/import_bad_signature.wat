;; Imports a provided host function with the wrong signature: linking fails.
;; Refused when the host loads the plugin.
(module
  (import "extism:host/env" "output_set" (func $output_set (param i32) (result i32)))
  (func (export "run") (result i32) (call $output_set (i32.const 0))))
