#!/bin/sh
# fuzz/run.sh - run the libFuzzer targets (fuzz/README.md).
#   sh fuzz/run.sh secs N BIN...   fuzz each for N seconds (make fuzz): new
#                                  inputs kept in build/fuzz/corpus/<name>/
#   sh fuzz/run.sh runs N BIN...   N inputs of each from the seeds with a
#                                  fixed seed (make fuzz-smoke, make test);
#                                  the slow storage targets run N/8;
#                                  targets in FUZZ_SEEDS_ONLY (names, space
#                                  separated) only replay their seeds
# Seeds are read from fuzz/corpus/<name>/ (never written), a dictionary from
# fuzz/<name>.dict when there is one; crashes go to
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
    dict=
    [ -f "fuzz/$name.dict" ] && dict="-dict=fuzz/$name.dict"
    : >"$log"
    total=0
    crashes=0
    t0=$(date +%s)
    # secs: a crash ends libFuzzer, so go on from the grown corpus until the
    # time is used up (each crash is kept); runs: one pass
    while :; do
        guard=900 # a hang guard (seconds), never a bound on the work
        if [ "$mode" = secs ]; then
            left=$((n - ($(date +%s) - t0)))
            [ $left -gt 0 ] || break
            opts="-max_total_time=$left"
            guard=$((left + 600))
        fi
        # -close_fd_mask=3: the targets' own output (storage messages) is
        # dropped; libFuzzer's and the sanitizers' reports still reach the log
        TMPDIR=$tmp timeout -k 10 $guard "$bin" $opts $dict -timeout=30 -close_fd_mask=3 -print_final_stats=1 \
            -artifact_prefix="$art/" "$corpus" "fuzz/corpus/$name" >"$log.part" 2>&1
        rc=$?
        [ $rc -eq 124 ] && echo "fuzz/run.sh: fuzz_$name hung for $guard s; killed" >>"$log.part"
        cat "$log.part" >>"$log"
        r=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log.part" | tail -1)
        [ -n "$r" ] || r=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log.part" | tail -1)
        total=$((total + ${r:-0}))
        [ $rc -ne 0 ] && crashes=$((crashes + 1))
        [ "$mode" = secs ] && [ $rc -ne 0 ] || break
    done
    rm -f "$log.part"
    rm -rf "$tmp"
    secs=$(($(date +%s) - t0))
    if [ $crashes -ne 0 ]; then
        fail=1
        echo "fuzz_$name: $total executions in $secs s, $crashes CRASH(ES) (log: $log, inputs: $art/)"
        grep -E "^SUMMARY" "$log" | sort | uniq -c | head -5
    else
        echo "fuzz_$name: $total executions in $secs s, clean"
    fi
done
[ $fail -eq 0 ]
