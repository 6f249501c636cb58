#!/bin/sh
# Runs the policy-core and simulator benchmarks; figures go to stdout.
# usage: [SAME=1] bench/sched/run.sh BUILD_DIR [SHARED_DIR]   (e.g. build ../shared)
set -e
B=${1:-build}
SHARED=${2:-$(dirname "$0")/../../../shared}
CYCLE=$B/bench/bench_sched_cycle
SIM=$B/service/sim/muster-sim
echo "== one full cycle: 10,000 nodes x 8 GPUs, 3-level topology, ~50,000 running"
for d in 1 100; do $CYCLE --pending 100000 --depth $d; done
for p in 1000 10000 100000; do $CYCLE --pending $p --depth 1; done
echo "== replay speed (CPU time of the replay; the trace is parsed before the clock starts)"
if [ -f "$SHARED/traces/kth-sp2/input.swf.gz" ]; then
  for p in easy "easy --predict" muster; do
    $SIM --swf "$SHARED/traces/kth-sp2/input.swf.gz" --policy $p
  done
  $SIM --swf "$SHARED/traces/kth-sp2/input.swf.gz" --policy easy --full-rebuild
fi
T=${TMPDIR:-/tmp}/muster-bench-300k.swf
[ -f "$T" ] || python3 "$(dirname "$0")/gen_trace.py" 300000 80000 1 > "$T"
$SIM --swf "$T" --policy easy --nodes 10000 --gpus-per-node 8
$SIM --swf "$T" --policy muster --nodes 10000 --gpus-per-node 8
$SIM --swf "$T" --policy easy --gpus 80000
if [ -n "$SAME" ]; then  # SAME=1: the view must not change the 300k schedule (minutes: one full-rebuild replay)
  "$(dirname "$0")/same_schedule.sh" "$SIM" --swf "$T" --policy easy --nodes 10000 --gpus-per-node 8
fi
