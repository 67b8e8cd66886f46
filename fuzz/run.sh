#!/bin/sh
# fuzz/run.sh - run the libFuzzer targets (fuzz/README.md).
#   sh fuzz/run.sh secs N BIN...   fuzz each for N seconds (make fuzz): new
#                                  inputs kept in build/fuzz/corpus/<name>/
#   sh fuzz/run.sh runs N BIN...   N inputs of each from the seeds with a
#                                  fixed seed (make fuzz-smoke, make test);
#                                  the slow storage targets run N/8;
#                                  targets in FUZZ_SEEDS_ONLY (names, space
#                                  separated) only replay their seeds
# Seeds are read from fuzz/corpus/<name>/ (never written); crashes go to
# build/fuzz/crashes/<name>/, logs to build/fuzz/logs/<name>.log. Prints
# executions per target; exits 1 when any target crashed.
set -u
mode=$1
n=$2
shift 2
out=build/fuzz
mkdir -p $out/logs
shm=/dev/shm
[ -d $shm ] && [ -w $shm ] || shm=$out/tmp
fail=0
for bin in "$@"; do
    name=${bin##*/fuzz_}
    art=$out/crashes/$name
    tmp=$shm/sluice-fuzz-$$-$name
    log=$out/logs/$name.log
    mkdir -p "$art" "$tmp"
    if [ "$mode" = secs ]; then
        corpus=$out/corpus/$name
        opts="-max_total_time=$n"
    else
        corpus=$out/smoke/$name
        rm -rf "$corpus"
        runs=$n
        case $name in manifest|journal|ingress_log) runs=$((n / 8)) ;; esac
        case " ${FUZZ_SEEDS_ONLY:-} " in *" $name "*) runs=0 ;; esac
        opts="-runs=$runs -seed=1"
    fi
    mkdir -p "$corpus"
    # -close_fd_mask=3: the targets' own output (storage messages) is
    # dropped; libFuzzer's and the sanitizers' reports still reach the log
    TMPDIR=$tmp "$bin" $opts -timeout=30 -close_fd_mask=3 -print_final_stats=1 \
        -artifact_prefix="$art/" "$corpus" "fuzz/corpus/$name" >"$log" 2>&1
    rc=$?
    rm -rf "$tmp"
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
    if [ $rc -ne 0 ]; then
        fail=1
        echo "fuzz_$name: CRASHED after ${runs:-?} executions (log: $log)"
        grep -E "^(==[0-9]+==ERROR|SUMMARY|artifact_prefix)|Test unit written" "$log" | head -5
    else
        echo "fuzz_$name: ${runs:-?} executions in ${secs:-?} s, clean"
    fi
done
[ $fail -eq 0 ]
