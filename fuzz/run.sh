#!/usr/bin/env bash
# Runs each fuzz target for FUZZ_SECONDS (default 30) and prints, per target,
# the executions, the speed, the corpus size and the findings. `make fuzz`.
#
#   FUZZ_SECONDS=600 FUZZ_TARGETS="validate json_scan" fuzz/run.sh
#   FUZZ_RUNS=10000000 FUZZ_SECONDS=3600 fuzz/run.sh   # stop at 10^7 executions
#   FUZZ_SANITIZER=none fuzz/run.sh        # default address (see FUZZING.md)
#
# New inputs go to fuzz/work/<target> (ignored), seeded from the committed
# corpus fuzz/corpus/<target> and fuzz/regressions/<target>; findings to
# fuzz/artifacts/<target>. Exits non-zero when any target found something.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET=${FUZZ_SECONDS:-30}
SANITIZER=${FUZZ_SANITIZER:-address}
POLICY_TARGETS="validate validate_structured validate_settings json_scan node_list fleet_summary fleet_decision"
LABELER_TARGETS="nvidia_smi rocm_smi kubelet_config sysfs_tree"
TARGETS=${FUZZ_TARGETS:-$POLICY_TARGETS $LABELER_TARGETS}
# Inputs slower than this are hangs; bigger than this are not what hosts send.
# fleet_decision gets 20 s: an input of 10,240 nodes (its seeds past the
# shape cap) takes 1.2 s without a sanitizer and 4.9 s under ASan, the
# target's own building of the fleet, its Node list and its summary
# included (FUZZING.md, "Figures").
TIMEOUT_SECONDS=${FUZZ_TIMEOUT:-5}
FLEET_TIMEOUT_SECONDS=${FUZZ_TIMEOUT:-20}
MAX_LEN=${FUZZ_MAX_LEN:-65536}
# -1: no limit on executions, only on time.
RUNS=${FUZZ_RUNS:--1}
# cargo-fuzz passes nightly-only flags; stable rustc takes them with this.
export RUSTC_BOOTSTRAP=1

command -v cargo-fuzz >/dev/null || {
    echo "cargo-fuzz is not installed: cargo install cargo-fuzz --locked" >&2
    exit 2
}

features() {
    case " $LABELER_TARGETS " in *" $1 "*) echo "--features labeler" ;; esac
}

timeout_for() {
    case $1 in fleet_decision) echo "$FLEET_TIMEOUT_SECONDS" ;; *) echo "$TIMEOUT_SECONDS" ;; esac
}

failed=0
summary=()
for target in $TARGETS; do
    work=fuzz/work/$target
    mkdir -p "$work" "fuzz/corpus/$target" "fuzz/regressions/$target" "fuzz/artifacts/$target"
    log=fuzz/work/$target.log
    before=$(find "fuzz/artifacts/$target" -type f | wc -l)
    # shellcheck disable=SC2046
    status=0
    cargo fuzz run -O -s "$SANITIZER" $(features "$target") "$target" \
        "$work" "fuzz/corpus/$target" "fuzz/regressions/$target" -- \
        -max_total_time="$SECONDS_PER_TARGET" -runs="$RUNS" -timeout="$(timeout_for "$target")" \
        -max_len="$MAX_LEN" -rss_limit_mb=4096 -print_final_stats=1 \
        >"$log" 2>&1 || status=$?
    after=$(find "fuzz/artifacts/$target" -type f | wc -l)
    stat() { grep -o "^stat::$1: *[0-9]*" "$log" | grep -o '[0-9]*$' | tail -1; }
    runs=$(stat number_of_executed_units)
    speed=$(stat average_exec_per_sec)
    # libFuzzer's own count: the work folder also keeps inputs it reduced.
    corpus=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
    findings=$((after - before))
    line=$(printf '%-20s %12s execs %8s exec/s %6s corpus %3s findings  exit %s' \
        "$target" "${runs:-?}" "${speed:-?}" "${corpus:-?}" "$findings" "$status")
    echo "$line"
    summary+=("$line")
    if [ "$status" -ne 0 ] || [ "$findings" -ne 0 ]; then
        failed=1
        echo "  see $log and fuzz/artifacts/$target" >&2
    fi
done
echo
echo "fuzz: ${SECONDS_PER_TARGET} s per target, sanitizer $SANITIZER"
printf '%s\n' "${summary[@]}"
exit "$failed"
