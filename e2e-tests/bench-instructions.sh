#!/usr/bin/env bash
# Instructions per admission of two policy modules, counted by valgrind's
# callgrind (deterministic, where this VM's wall-clock time is not): the
# comparisons of BENCHMARKS.md in one command. A measurement, not a test:
# nothing is asserted but that every run answered; not part of `make test`.
#
#   e2e-tests/bench-instructions.sh BASE.wasm NEW.wasm
#
# Both modules are run by the same host binary, e2e-tests/examples/profile.rs,
# built here unstripped (so that callgrind finds `WapcHost::call`) in
# target/unstripped. Two tables are printed (Markdown):
#
# 1. The host refusing every capability call (no cluster view), for each of
#    REQUESTS: BASE and NEW in Wasm, the change, and NEW's source compiled
#    natively (`gpu_topology_policy::validate`; the sources of this checkout).
#    With BASE_SETTINGS, also NEW run with BASE's settings file: what the
#    settings text alone changes.
# 2. The summary path: capacity.source auto with a fresh fleet summary, the
#    host serving the summarizer's ConfigMap of the fleet benchmark's cloud
#    fleet of each of NODES nodes (profile's SUMMARY_NODES) and refusing
#    anything else, for each of SUMMARY_REQUESTS, BASE and NEW. A cell reads
#    "failed" where the module did not take the summary path on every call
#    (see its log).
#
# Environment (all optional):
#   BASE_SETTINGS     settings file BASE runs with (default: the one NEW runs
#                     with, examples/settings.yaml); a revision older than a
#                     settings key may refuse it: give it its own file,
#                     `git show REV:examples/settings.yaml > base-settings.yaml`
#   REQUESTS          requests of table 1 (default: the three of BENCHMARKS.md;
#                     empty: none, e.g. to run the two tables side by side)
#   SUMMARY_REQUESTS  requests of table 2 (default: the 8-GPU pod, the 5 KB pod)
#   NODES             fleet sizes of tables 2 and 3 (default: 50 500 5000)
#   FLEETS            table 3, NEW alone: the summary path of each named
#                     fleet (profile's FLEET: two-socket, gb200, grace-cloud;
#                     default: none), for SUMMARY_REQUESTS at NODES
#   DRA_REQUESTS      table 4, NEW alone: the claim path (a ResourceClaimTemplate
#                     CREATE) against the DRA fleet of NODES nodes (profile's
#                     DRA_NODES), read from the fleet summary's draDevices and
#                     from the ResourceSlice list (default: the 2-GPU template
#                     of the e2e scenarios; empty: none)
#   OUT               where callgrind's files and each run's log go
#                     (default: target/bench-instructions)
#
# Per call is callgrind's `Collected` over the calls the profile tool made
# (2,000 warm-up calls and 1,000 timed ones, "calls in all" in its output;
# 10 and 10 on table 4's slice-list path);
# in Wasm it includes the host's side of the waPC call.
set -euo pipefail

usage() {
    echo "usage: $0 BASE.wasm NEW.wasm (environment: see the script's header)" >&2
    exit 2
}
[ $# -eq 2 ] || usage
base=$(realpath "$1")
new=$(realpath "$2")
for module in "$base" "$new"; do
    [ -f "$module" ] || { echo "$0: no module at $module" >&2; exit 2; }
done

cd "$(dirname "$0")/.."
root=$(pwd)
base_settings=$(realpath "${BASE_SETTINGS:-$root/examples/settings.yaml}")
new_settings=$root/examples/settings.yaml
requests=${REQUESTS-e2e-tests/benches/requests/inference-pod-5kb.json examples/requests/training-pod.json examples/requests/non-gpu-pod.json}
summary_requests=${SUMMARY_REQUESTS-examples/requests/eight-gpu-pod.json e2e-tests/benches/requests/inference-pod-5kb.json}
nodes=${NODES-50 500 5000}
fleets=${FLEETS-}
dra_requests=${DRA_REQUESTS-e2e-tests/scenarios/requests/dra-template-two-gpus.json}
out=${OUT:-target/bench-instructions}
mkdir -p "$out"

CARGO_PROFILE_RELEASE_STRIP=false CARGO_TARGET_DIR=target/unstripped \
    cargo build --locked --release -p e2e-tests --example profile >&2
profile=target/unstripped/release/examples/profile

# count NAME TOGGLE MODULE REQUEST [VAR=VALUE...]: prints instructions per
# call, or "failed" (the run's log is $out/NAME.log).
count() {
    local name=$1 toggle=$2 module=$3 request=$4
    shift 4
    local log=$out/$name.log
    if ! env "$@" valgrind --tool=callgrind --callgrind-out-file="$out/$name.callgrind" \
        --collect-atstart=no --toggle-collect="$toggle" \
        "$profile" "$module" "$request" 0.01 >"$log" 2>&1; then
        echo failed
        return
    fi
    local collected calls
    collected=$(sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$log")
    calls=$(sed -n 's/.*(\([0-9]*\) calls in all)$/\1/p' "$log")
    if [ -z "$collected" ] || [ -z "$calls" ]; then
        echo failed
        return
    fi
    awk -v c="$collected" -v n="$calls" 'BEGIN { printf "%.1fk", c / n / 1000 }'
}

# change OLD NEW: the relative change of two counts like "199.6k".
change() {
    case "$1$2" in
    *failed*) echo "n/a" ;;
    *) awk -v a="${1%k}" -v b="${2%k}" 'BEGIN { printf "%+.1f%%", (b - a) / a * 100 }' ;;
    esac
}

wasm='*WapcHost*call*'
native='gpu_topology_policy::validate'
echo "base: $base ($(stat -c %s "$base") bytes), settings $base_settings"
echo "new:  $new ($(stat -c %s "$new") bytes), settings $new_settings"
echo
echo "No cluster view (the host refuses every call), instructions per call:"
echo
if [ -n "${BASE_SETTINGS:-}" ]; then
    echo "| request | wasm base | wasm new | change | wasm new, base's settings | native new | wasm/native new |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
else
    echo "| request | wasm base | wasm new | change | native new | wasm/native new |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: |"
fi
for request in $requests; do
    name=$(basename "$request" .json)
    b=$(count "refused-base-$name" "$wasm" "$base" "$request" SETTINGS="$base_settings")
    n=$(count "refused-new-$name" "$wasm" "$new" "$request" SETTINGS="$new_settings")
    both=
    if [ -n "${BASE_SETTINGS:-}" ]; then
        both=" $(count "refused-new-base-settings-$name" "$wasm" "$new" "$request" \
            SETTINGS="$base_settings") |"
    fi
    x=$(count "native-$name" "$native" native "$request" SETTINGS="$new_settings")
    ratio=n/a
    case "$n$x" in *failed*) ;; *) ratio=$(awk -v a="${n%k}" -v b="${x%k}" 'BEGIN { printf "%.2f", a / b }') ;; esac
    echo "| $name | $b | $n | $(change "$b" "$n") |$both $x | $ratio |"
done
echo
echo "The summary path (a fresh fleet summary of N nodes), instructions per call:"
echo
echo "| request | nodes | summary bytes | wasm base | wasm new | change |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for request in $summary_requests; do
    name=$(basename "$request" .json)
    for n_nodes in $nodes; do
        b=$(count "summary-base-$name-$n_nodes" "$wasm" "$base" "$request" \
            SETTINGS="$base_settings" SUMMARY_NODES="$n_nodes")
        n=$(count "summary-new-$name-$n_nodes" "$wasm" "$new" "$request" \
            SETTINGS="$new_settings" SUMMARY_NODES="$n_nodes")
        bytes=$(sed -n 's/^summary of [0-9]* nodes: \([0-9]*\) bytes.*/\1/p' \
            "$out/summary-new-$name-$n_nodes.log")
        echo "| $name | $n_nodes | ${bytes:-n/a} | $b | $n | $(change "$b" "$n") |"
    done
done
if [ -n "$fleets" ]; then
    echo
    echo "NEW on the summary path of other fleets (FLEETS), instructions per call:"
    echo
    echo "| request | fleet | nodes | summary bytes | wasm new |"
    echo "| --- | --- | ---: | ---: | ---: |"
    for request in $summary_requests; do
        name=$(basename "$request" .json)
        for fleet in $fleets; do
            for n_nodes in $nodes; do
                n=$(count "fleet-$fleet-$name-$n_nodes" "$wasm" "$new" "$request" \
                    SETTINGS="$new_settings" SUMMARY_NODES="$n_nodes" FLEET="$fleet")
                bytes=$(sed -n 's/^summary of [0-9]* nodes: \([0-9]*\) bytes.*/\1/p' \
                    "$out/fleet-$fleet-$name-$n_nodes.log")
                echo "| $name | $fleet | $n_nodes | ${bytes:-n/a} | $n |"
            done
        done
    done
fi
if [ -n "$dra_requests" ]; then
    echo
    echo "NEW on the claim path (a DRA fleet of N nodes, from the summary and from the slice list), instructions per call:"
    echo
    echo "| request | nodes | source | bytes read | wasm new |"
    echo "| --- | ---: | --- | ---: | ---: |"
    for request in $dra_requests; do
        name=$(basename "$request" .json)
        for n_nodes in $nodes; do
            for source in summary slices; do
                # A slice list of thousands of nodes takes milliseconds per
                # call: counted over 10 calls (and 10 warm-up calls).
                few=()
                [ "$source" = slices ] && few=(WARM_UP_CALLS=10 BATCH_CALLS=10)
                n=$(count "dra-$source-$name-$n_nodes" "$wasm" "$new" "$request" \
                    SETTINGS="$new_settings" DRA_NODES="$n_nodes" DRA_SOURCE="$source" "${few[@]}")
                bytes=$(sed -n 's/^DRA fleet of [0-9]* nodes from the [a-z]*: \([0-9]*\) bytes.*/\1/p' \
                    "$out/dra-$source-$name-$n_nodes.log")
                echo "| $name | $n_nodes | $source | ${bytes:-n/a} | $n |"
            done
        done
    done
fi
