;; capprobe: hostile probes of toolhost's capability layer, written by hand so
;; that no guest library cleans paths or checks offsets first.
;;
;; File probes act on the first preopened directory (fd 3, the grant) with raw
;; WASI calls and return the errno they got: 0 means the operation succeeded,
;; which for every probe here is an escape or a write that must not happen.
;; Fetch probes pass bad offsets or bad bytes to toolhost.http_fetch and set
;; the Extism output to whatever block it answers.
;;
;; Rebuild: wat2wasm capprobe.wat -o capprobe.wasm
(module
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_filestat_set_size"
    (func $fd_filestat_set_size (param i32 i64) (result i32)))
  (import "wasi_snapshot_preview1" "path_unlink_file"
    (func $path_unlink_file (param i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_create_directory"
    (func $path_create_directory (param i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_rename"
    (func $path_rename (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_symlink"
    (func $path_symlink (param i32 i32 i32 i32 i32) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "length" (func $length (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "toolhost" "http_fetch" (func $http_fetch (param i64) (result i64)))

  (memory (export "memory") 1 1)

  ;; Strings (offset, length).
  (data (i32.const 16) "../outside.txt")          ;; 16, 14
  (data (i32.const 48) "sub/../../outside.txt")   ;; 48, 21
  (data (i32.const 80) "/etc/passwd")             ;; 80, 11
  (data (i32.const 112) "escape")                 ;; 112, 6
  (data (i32.const 128) "created.txt")            ;; 128, 11
  (data (i32.const 144) "hello.txt")              ;; 144, 9
  (data (i32.const 160) "newdir")                 ;; 160, 6
  (data (i32.const 176) "moved.txt")              ;; 176, 9
  (data (i32.const 192) "link")                   ;; 192, 4
  (data (i32.const 208) "pwned")                  ;; 208, 5
  (data (i32.const 224) "not json")               ;; 224, 8
  (data (i32.const 256) "{\"url\":\"http://forbidden.invalid/\"}") ;; 256, 35
  ;; iovec for fd_write at 512: {buf=208, len=5}
  (data (i32.const 512) "\d0\00\00\00\05\00\00\00")

  ;; rights: fd_read = 1<<1, fd_write = 1<<6, fd_filestat_set_size = 1<<22
  (func $open (param $path i32) (param $len i32) (param $oflags i32) (param $rights i64) (result i32)
    (call $path_open (i32.const 3) (i32.const 1) (local.get $path) (local.get $len)
      (local.get $oflags) (local.get $rights) (i64.const 0) (i32.const 0) (i32.const 600)))

  (func (export "open_dotdot") (result i32)
    (call $open (i32.const 16) (i32.const 14) (i32.const 0) (i64.const 2)))
  (func (export "open_dotdot_deep") (result i32)
    (call $open (i32.const 48) (i32.const 21) (i32.const 0) (i64.const 2)))
  (func (export "open_absolute") (result i32)
    (call $open (i32.const 80) (i32.const 11) (i32.const 0) (i64.const 2)))
  (func (export "open_symlink_escape") (result i32)
    (call $open (i32.const 112) (i32.const 6) (i32.const 0) (i64.const 2)))
  ;; O_CREAT = 1
  (func (export "create_file") (result i32)
    (call $open (i32.const 128) (i32.const 11) (i32.const 1) (i64.const 66)))
  ;; O_TRUNC = 8; if the open succeeds, the write must fail.
  (func (export "write_existing") (result i32)
    (local $errno i32)
    (local.set $errno (call $open (i32.const 144) (i32.const 9) (i32.const 8) (i64.const 4194370)))
    (if (local.get $errno) (then (return (local.get $errno))))
    (call $fd_write (i32.load (i32.const 600)) (i32.const 512) (i32.const 1) (i32.const 604)))
  (func (export "truncate_existing") (result i32)
    (local $errno i32)
    (local.set $errno (call $open (i32.const 144) (i32.const 9) (i32.const 0) (i64.const 4194370)))
    (if (local.get $errno) (then (return (local.get $errno))))
    (call $fd_filestat_set_size (i32.load (i32.const 600)) (i64.const 0)))
  (func (export "unlink") (result i32)
    (call $path_unlink_file (i32.const 3) (i32.const 144) (i32.const 9)))
  (func (export "mkdir") (result i32)
    (call $path_create_directory (i32.const 3) (i32.const 160) (i32.const 6)))
  (func (export "rename") (result i32)
    (call $path_rename (i32.const 3) (i32.const 144) (i32.const 9) (i32.const 3) (i32.const 176) (i32.const 9)))
  (func (export "symlink") (result i32)
    (call $path_symlink (i32.const 80) (i32.const 11) (i32.const 3) (i32.const 192) (i32.const 4)))

  ;; Copy len bytes at ptr into a new Extism block; return its offset.
  (func $block (param $ptr i32) (param $len i32) (result i64)
    (local $off i64) (local $i i32)
    (local.set $off (call $alloc (i64.extend_i32_u (local.get $len))))
    (block $done
      (loop $copy
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (call $store_u8 (i64.add (local.get $off) (i64.extend_i32_u (local.get $i)))
          (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $copy)))
    (local.get $off))

  ;; Output the block at off (nothing if off is 0).
  (func $answer (param $off i64) (result i32)
    (if (i64.ne (local.get $off) (i64.const 0))
      (then (call $output_set (local.get $off) (call $length (local.get $off)))))
    (i32.const 0))

  (func (export "fetch_offset_zero") (result i32)
    (call $answer (call $http_fetch (i64.const 0))))
  (func (export "fetch_offset_max") (result i32)
    (call $answer (call $http_fetch (i64.const -1))))
  ;; A live block's offset plus 2^32: equal to it if truncated to 32 bits.
  (func (export "fetch_offset_wraps") (result i32)
    (call $answer (call $http_fetch
      (i64.add (call $block (i32.const 256) (i32.const 35)) (i64.const 0x100000000)))))
  ;; Inside a live block, not at its start.
  (func (export "fetch_offset_inside") (result i32)
    (call $answer (call $http_fetch
      (i64.add (call $block (i32.const 256) (i32.const 35)) (i64.const 8)))))
  (func (export "fetch_offset_random") (result i32)
    (call $answer (call $http_fetch (i64.const 0x7fff1234))))
  (func (export "fetch_not_json") (result i32)
    (call $answer (call $http_fetch (call $block (i32.const 224) (i32.const 8)))))
  ;; A well-formed request to a host not in allowed_hosts, made 100 times:
  ;; the answers must turn into "too many requests" after MaxFetchesPerCall.
  (func (export "fetch_many") (result i32)
    (local $i i32) (local $off i64)
    (block $done
      (loop $again
        (br_if $done (i32.ge_u (local.get $i) (i32.const 100)))
        (local.set $off (call $http_fetch (call $block (i32.const 256) (i32.const 35))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $again)))
    (call $answer (local.get $off)))
  ;; The same request once, failing the call: the error code must be
  ;; permission_denied.
  (func (export "fetch_forbidden_then_fail") (result i32)
    (drop (call $http_fetch (call $block (i32.const 256) (i32.const 35))))
    (i32.const 1))
)
