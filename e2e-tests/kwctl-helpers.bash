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
  fi
  if [ "$(jq length <<<"$failures")" -ne 0 ]; then
    echo "FAIL $name ($(jq -r .description "$file")):"
    jq -r '.[] | "  - " + .' <<<"$failures"
    return 1
  fi
}
