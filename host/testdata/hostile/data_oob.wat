;; An active data segment that does not fit in the memory it initialises:
;; instantiation fails. Refused when the host loads the plugin.
(module
  (memory 1)
  (data (i32.const 65530) "0123456789abcdef")
  (func (export "run") (result i32) (i32.const 0)))
