;; A minimal waPC guest for testing the harness against the protocol itself,
;; independently of the policy. The host writes the operation name at 0 and the
;; payload at 1024. Behaviour by operation-name length:
;;   4 bytes ("trap")  -> executes `unreachable` (a Wasm trap)
;;   5 bytes ("error") -> __guest_error with the payload as the message
;;   otherwise: an empty payload answers "v1" (as protocol_version does),
;;   any other payload is echoed back.
(module
  (import "wapc" "__guest_request" (func $guest_request (param i32 i32)))
  (import "wapc" "__guest_response" (func $guest_response (param i32 i32)))
  (import "wapc" "__guest_error" (func $guest_error (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 2048) "\"v1\"")
  (func (export "__guest_call") (param $op_len i32) (param $len i32) (result i32)
    (call $guest_request (i32.const 0) (i32.const 1024))
    (if (i32.eq (local.get $op_len) (i32.const 4)) (then unreachable))
    (if (i32.eq (local.get $op_len) (i32.const 5))
      (then
        (call $guest_error (i32.const 1024) (local.get $len))
        (return (i32.const 0))))
    (if (i32.eqz (local.get $len))
      (then
        (call $guest_response (i32.const 2048) (i32.const 4))
        (return (i32.const 1))))
    (call $guest_response (i32.const 1024) (local.get $len))
    (i32.const 1))
)
