# Helpers of the generated kwctl bats suite (e2e-tests/kwctl.bats, written by
# gen-kwctl-bats.sh): run one scenario file through `kwctl run` and check the
# answer the way the Rust runner (e2e-tests/src/scenario.rs) does. The checks
# on the decoded answer are in kwctl-check.jq.

# Locates the repository, the module and kwctl once per suite.
kwctl_setup_file() {
  export REPO_ROOT="$BATS_TEST_DIRNAME/.."
  export MODULE="${POLICY_MODULE:-$REPO_ROOT/annotated-policy.wasm}"
  export KWCTL="${KWCTL:-kwctl}"
  [ -f "$MODULE" ] || {
    echo "$MODULE is missing: run \`make annotated-policy.wasm\` first" >&3
    return 1
  }
}

# Runs scenario NAME (e2e-tests/scenarios/NAME.json); prints what failed and
# returns 1 when anything did.
run_scenario() {
  local name=$1
  local file="$BATS_TEST_DIRNAME/scenarios/$name.json"
  local dir request settings_args=() extra_args=() failures patch
  dir=$(dirname "$file")
  request="$dir/$(jq -r .request "$file")"
  if jq -e '.settings | type == "string"' "$file" >/dev/null; then
    settings_args=(--settings-path "$dir/$(jq -r .settings "$file")")
  else
    settings_args=(--settings-json "$(jq -c '.settings // {}' "$file")")
  fi
  if jq -e '.session' "$file" >/dev/null; then
    extra_args+=(--replay-host-capabilities-interactions "$dir/$(jq -r .session "$file")")
  fi
  if jq -e '(.contextAwareResources // []) | length > 0' "$file" >/dev/null; then
    # Without a session, kwctl would query the cluster in KUBECONFIG.
    if ! jq -e '.session' "$file" >/dev/null; then
      echo "FAIL $name: contextAwareResources without a session file"
      return 1
    fi
    extra_args+=(--allow-context-aware)
  fi

  # KWCTL_ARGS is split on whitespace on purpose: it holds several arguments.
  # shellcheck disable=SC2086
  run --separate-stderr "$KWCTL" run "${settings_args[@]}" "${extra_args[@]}" $KWCTL_ARGS \
    --request-path "$request" "$MODULE"

  if jq -e '.expect.settingsValid == false' "$file" >/dev/null; then
    # kwctl refuses invalid settings before evaluating: non-zero exit, message
    # on stderr. It prints the policy's message Debug-formatted (`"...\"..."`),
    # so escaped quotes are unescaped before fragments are looked for.
    failures=$(jq -n --arg text "$output$stderr" --argjson status "$status" --slurpfile s "$file" '
      ($text | gsub("\\\\\""; "\"")) as $text
      | ($s[0].expect.message | if type == "array" then . elif type == "string" then [.] else [] end) as $f
      | [ (if $status == 0 then "kwctl accepted settings that must be refused" else empty end),
          ($f[] | select(. as $x | $text | contains($x) | not) | "kwctl output does not mention \(tojson)") ]')
  elif [ "$status" -ne 0 ]; then
    failures=$(jq -n --arg e "$stderr" '["kwctl run failed: \($e)"]')
  elif ! patch=$(jq -r '.patch // empty' <<<"$output" | base64 --decode); then
    # The patch is decoded as the Kubewarden policies' e2e.bats do: jq takes
    # the base64 text out of the AdmissionResponse, base64 decodes it.
    failures=$(jq -n --arg out "$output" '["the patch is not base64: \($out)"]')
  elif ! failures=$(jq \
      --argjson expect "$(jq .expect "$file")" \
      --argjson object "$(jq 'if .kind == "AdmissionReview" then .request.object else .object end' "$request")" \
      --argjson patch "${patch:-[]}" \
      -f "$BATS_TEST_DIRNAME/kwctl-check.jq" <<<"$output"); then
    failures=$(jq -n --arg out "$output" '["cannot check kwctl output: \($out)"]')
  else
    # The operator's tool must answer as kwctl did (issue #22).
    failures=$(jq -n --argjson a "$failures" --argjson b "$(tool_differences "$file" "$output" "${patch:-[]}")" '$a + $b')
  fi
  if [ "$(jq length <<<"$failures")" -ne 0 ]; then
    echo "FAIL $name ($(jq -r .description "$file")):"
    jq -r '.[] | "  - " + .' <<<"$failures"
    return 1
  fi
}

# The `gpu-topology` binary: GPU_TOPOLOGY, else the workspace's debug build
# (`cargo test --workspace` builds it); fails when there is none.
tool_binary() {
  local tool="${GPU_TOPOLOGY:-$REPO_ROOT/target/debug/gpu-topology}"
  [ -x "$tool" ] && echo "$tool"
}

# The differences, as a JSON list, between `gpu-topology explain -o json`
# on scenario FILE and kwctl's answer (its AdmissionResponse OUTPUT and
# decoded PATCH): the decision and the patch (operations in any order).
# `[]` when there is no gpu-topology binary, or when the scenario cannot
# be given to the tool as files (`tool-files` exits 3: an UPDATE, a
# refused read, no session), so the suite runs without the tool too.
tool_differences() {
  local file=$1 kwctl_output=$2 kwctl_patch=$3 tool files dir args_text report code
  local args=()
  files="${TOOL_FILES:-$REPO_ROOT/target/debug/tool-files}"
  if ! tool=$(tool_binary) || [ ! -x "$files" ]; then
    echo '[]'
    return 0
  fi
  dir=$(mktemp -d "${BATS_TEST_TMPDIR:-${TMPDIR:-/tmp}}/tool.XXXXXX")
  if args_text=$("$files" "$file" "$dir"); then
    code=0
  else
    code=$?
  fi
  if [ "$code" -eq 3 ]; then
    echo '[]'
    return 0
  elif [ "$code" -ne 0 ]; then
    jq -n --arg f "$file" '["tool-files cannot write the tool'"'"'s inputs for \($f)"]'
    return 0
  fi
  mapfile -t args <<<"$args_text"
  # 0: all admitted, 1: rejected; 2 is bad input.
  if report=$("$tool" explain "${args[@]}" -o json); then
    code=0
  else
    code=$?
  fi
  if [ "$code" -gt 1 ]; then
    jq -n --arg args "${args[*]}" '["gpu-topology explain \($args) failed (bad input)"]'
    return 0
  fi
  jq -n --argjson report "$report" --arg out "$kwctl_output" --argjson patch "$kwctl_patch" '
    ($out | fromjson) as $kwctl
    | $report.items[0] as $tool
    | [ (if $tool.allowed != $kwctl.allowed
         then "gpu-topology explain: allowed \($tool.allowed), kwctl run: \($kwctl.allowed)" else empty end),
        (if ($tool.patch | sort_by(.path)) != ($patch | sort_by(.path))
         then "gpu-topology explain patch \($tool.patch | tojson) differs from kwctl run'"'"'s \($patch | tojson)" else empty end) ]'
}
