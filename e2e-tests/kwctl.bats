#!/usr/bin/env bats
# The e2e scenarios (e2e-tests/scenarios/*.json) through a real `kwctl run`,
# the Kubewarden convention; the Rust harness runs the very same files.
#
# Needs kwctl, jq and the annotated module (`make annotated-policy.wasm`;
# `make e2e-tests` does all of it). Environment:
#   KWCTL          kwctl binary (default: kwctl on PATH)
#   KWCTL_ARGS     extra arguments for every `kwctl run`; on a machine that
#                  cannot reach the internet, kwctl needs
#                  `--sigstore-trust-config FILE` here, or it tries to fetch
#                  the Sigstore trust root when it starts
#   POLICY_MODULE  module to run (default: annotated-policy.wasm at the repo root)

setup_file() {
  export REPO_ROOT="$BATS_TEST_DIRNAME/.."
  export MODULE="${POLICY_MODULE:-$REPO_ROOT/annotated-policy.wasm}"
  export KWCTL="${KWCTL:-kwctl}"
  [ -f "$MODULE" ] || {
    echo "$MODULE is missing: run \`make annotated-policy.wasm\` first" >&3
    return 1
  }
}

# Runs one scenario file; prints its failures and returns 1 when there are any.
run_scenario() {
  local file=$1 dir request settings_args=() extra_args=() out err status failures
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
      echo "FAIL $(basename "$file" .json): contextAwareResources without a session file"
      return 1
    fi
    extra_args+=(--allow-context-aware)
  fi
  err=$(mktemp)
  # KWCTL_ARGS is split on whitespace on purpose: it holds several arguments.
  # shellcheck disable=SC2086
  out=$("$KWCTL" run "${settings_args[@]}" "${extra_args[@]}" $KWCTL_ARGS \
    --request-path "$request" "$MODULE" 2>"$err")
  status=$?

  if jq -e '.expect.settingsValid == false' "$file" >/dev/null; then
    # kwctl refuses invalid settings before evaluating: non-zero exit, message
    # on stderr. It prints the policy's message Debug-formatted (`"...\"..."`),
    # so escaped quotes are unescaped before fragments are looked for.
    failures=$(jq -n --arg text "$out$(cat "$err")" --argjson status "$status" --slurpfile s "$file" '
      ($text | gsub("\\\\\""; "\"")) as $text
      | ($s[0].expect.message | if type == "array" then . elif type == "string" then [.] else [] end) as $f
      | [ (if $status == 0 then "kwctl accepted settings that must be refused" else empty end),
          ($f[] | select(. as $x | $text | contains($x) | not) | "kwctl output does not mention \(tojson)") ]')
  elif [ "$status" -ne 0 ]; then
    failures=$(jq -n --arg e "$(cat "$err")" '["kwctl run failed: \($e)"]')
  elif ! failures=$(echo "$out" | jq \
      --argjson expect "$(jq .expect "$file")" \
      --argjson object "$(jq 'if .kind == "AdmissionReview" then .request.object else .object end' "$request")" \
      -f "$BATS_TEST_DIRNAME/kwctl-check.jq"); then
    failures=$(jq -n --arg out "$out" '["cannot check kwctl output: \($out)"]')
  fi
  rm -f "$err"
  if [ "$(echo "$failures" | jq length)" -ne 0 ]; then
    echo "FAIL $(basename "$file" .json):"
    echo "$failures" | jq -r '.[] | "  - " + .'
    return 1
  fi
  echo "ok   $(basename "$file" .json)"
}

@test "every e2e scenario passes under kwctl run" {
  local failed=0 total=0 file
  for file in "$BATS_TEST_DIRNAME"/scenarios/*.json; do
    total=$((total + 1))
    run_scenario "$file" || failed=$((failed + 1))
  done
  echo "$((total - failed)) of $total scenarios passed under kwctl"
  [ "$failed" -eq 0 ]
}

@test "the examples evaluate under kwctl (KWCTL=... make demo)" {
  run cargo run --quiet -p e2e-tests --bin evaluate -- --kwctl "$KWCTL" \
    --module "$MODULE" --settings "$REPO_ROOT/examples/settings.yaml" "$REPO_ROOT"/examples/requests/*.json
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"decision: accepted, mutated"* ]]
}
