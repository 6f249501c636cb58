#!/bin/sh
# Replays a trace twice, with the policy core's incremental view (the default)
# and with --full-rebuild, and fails unless schedules and placements (nodes and
# GPU indexes of every run) are byte-identical. The view must change no decision.
# usage: bench/sched/same_schedule.sh MUSTER_SIM TRACE_ARGS...
#   e.g. bench/sched/same_schedule.sh build/service/sim/muster-sim \
#          --swf /tmp/muster-bench-300k.swf --nodes 10000 --gpus-per-node 8 --policy easy
set -e
SIM=$1
shift
D=$(mktemp -d "${TMPDIR:-/tmp}/muster-same.XXXXXX")
trap 'rm -rf "$D"' EXIT
"$SIM" "$@" --schedule-out "$D/view.swf" --placements-out "$D/view.jsonl"
"$SIM" "$@" --full-rebuild --schedule-out "$D/full.swf" --placements-out "$D/full.jsonl"
cmp "$D/view.swf" "$D/full.swf"
cmp "$D/view.jsonl" "$D/full.jsonl"
echo "same schedule and placements: $(wc -l < "$D/view.jsonl") runs"
