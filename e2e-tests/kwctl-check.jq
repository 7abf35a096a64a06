# Checks one `kwctl run` AdmissionResponse (the input) against a scenario's
# expectation, the same checks as the Rust runner (e2e-tests/src/scenario.rs).
# Arguments: --argjson expect <scenario .expect>, --argjson object <the request's object>,
# --argjson patch <the response's patch, base64-decoded by the caller; [] when none>.
# Output: a JSON array of failure messages (empty: the scenario passed).

def fragments: if type == "array" then . elif type == "string" then [.] else [] end;

# A JSON pointer as a jq path ("/spec/containers/0" -> ["spec","containers",0]).
def pointer_path:
  if . == "" then []
  else .[1:] | split("/") | map(gsub("~1"; "/") | gsub("~0"; "~") | if test("^[0-9]+$") then tonumber else . end)
  end;

# Applies the add/replace/remove operations json-patch's diff produces.
def apply_patch($ops):
  reduce $ops[] as $op (.;
    if $op.op == "remove" then delpaths([$op.path | pointer_path])
    else setpath($op.path | pointer_path; $op.value) end);

def matches($e):
  .op == $e.op and .path == $e.path and (($e | has("value") | not) or .value == $e.value);

. as $response
| ($response.status.message // "") as $message
| $patch as $actual
| [
    (if ($expect.allowed != null) and ($response.allowed != $expect.allowed)
     then "expected allowed=\($expect.allowed), got \($response.allowed) (message: \($message | tojson))"
     else empty end),
    ($expect.message | fragments[] as $f
     | select($message | contains($f) | not)
     | "message \($message | tojson) does not contain \($f | tojson)"),
    ($expect.warning | fragments[] as $f
     | select([($response.warnings // [])[] | contains($f)] | any | not)
     | "no warning contains \($f | tojson)"),
    (if $expect.noWarnings == true and (($response.warnings // []) | length) > 0
     then "expected no warning, got \($response.warnings | tojson)"
     else empty end),
    (if $expect.patch != null then
       ($expect.patch[] as $e | select([$actual[] | matches($e)] | any | not)
        | "missing patch operation \($e | tojson)"),
       ($actual[] as $a | select([$expect.patch[] as $e | $a | matches($e)] | any | not)
        | "unexpected patch operation \($a | tojson)")
     else empty end),
    (($object | apply_patch($actual)) as $after
     | ($expect.patched // {}) | to_entries[]
     | (.key | pointer_path) as $path
     | ($after | getpath($path)) as $found
     | select($found != .value)
     | "after admission \(.key) is \($found | tojson), expected \(.value | tojson)"),
    (($object | apply_patch($actual)) as $after
     | ($expect.patchedAnyOrder // {}) | to_entries[]
     | (.key | pointer_path) as $path
     | ($after | getpath($path)) as $found
     | select(($found | type) != "array" or ($found | sort) != (.value | sort))
     | "after admission \(.key) is \($found | tojson), expected these items in any order: \(.value | tojson)"),
    (($object | apply_patch($actual)) as $after
     | ($expect.patchedContains // {}) | to_entries[]
     | (.key | pointer_path) as $path
     | ($after | getpath($path)) as $found
     | .key as $pointer
     | .value[] as $item
     | select(($found | type) != "array" or (any($found[]; . == $item) | not))
     | "after admission \($pointer) is \($found | tojson), which does not include \($item | tojson)")
  ]
