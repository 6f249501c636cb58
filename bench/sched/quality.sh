#!/bin/sh
# Schedule quality of `--policy muster` against `--policy easy` (issue 14 item 3).
# usage: bench/sched/quality.sh TRACE.swf[.gz]...   (from the repository root)
# For each trace, on a flat pool of MaxProcs one-GPU nodes: easy, muster with its defaults, and,
# when $TUNED is set (a JSON object of cluster-file "settings", docs/scheduling.md), muster with
# those settings, e.g. TUNED='{"starve_after": 0}'. Columns: mean wait, p99 and max wait (s),
# mean and max bounded slowdown (tau = 10 s), mean bsld of the worst-treated 1% of jobs,
# utilisation, and max wait / EASY's max wait. SIM= overrides the binary.
# Traces: ../shared/traces/kth-sp2/input.swf.gz is here; the others are public traces of the
# Parallel Workloads Archive kept out of git (bench/RESULTS.md says where they came from).
set -eu
SIM=${SIM:-build/service/sim/muster-sim}
TUNED=${TUNED:-}
dir=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-14s %-13s %7s %10s %10s %10s %9s %10s %11s %6s %6s\n' trace policy jobs mean_wait \
	p99_wait max_wait mean_bsld max_bsld worst1%bsld util maxw/E
for t in "$@"; do
	name=$(basename "$t" | sed 's/\.gz$//; s/\.swf$//')
	[ "$name" = input ] && name=$(basename "$(dirname "$t")")
	procs=$( (gzip -dc "$t" 2>/dev/null || cat "$t") | sed -n 's/^; *MaxProcs: *\([0-9]*\).*/\1/p' | head -1)
	"$SIM" --swf "$t" --policy easy --quiet --lenient --schedule-out "$tmp/easy.swf"
	"$SIM" --swf "$t" --policy muster --quiet --lenient --schedule-out "$tmp/muster.swf"
	extra=
	if [ -n "$TUNED" ]; then
		printf '{"nodes": [{"name": "n", "gpus": 1, "count": %s}], "settings": %s}\n' "$procs" \
			"$TUNED" >"$tmp/tuned.json"
		"$SIM" --swf "$t" --policy muster --quiet --lenient --cluster "$tmp/tuned.json" \
			--schedule-out "$tmp/tuned.swf"
		extra="muster-tuned=$tmp/tuned.swf"
	fi
	# shellcheck disable=SC2086
	python3 "$dir/quality_metrics.py" "$name" "$tmp/easy.swf" "muster=$tmp/muster.swf" $extra
done
