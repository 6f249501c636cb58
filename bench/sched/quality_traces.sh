#!/bin/sh
# Builds the traces bench/RESULTS.md "Schedule quality" was measured on, into DIR (not git).
# usage: bench/sched/quality_traces.sh PREDICTSIM_CLONE DEEP_BATCH_CLONE DIR
#   PREDICTSIM_CLONE: a clone of github.com/jad-darrous/predictsim (it vendors the Parallel
#     Workloads Archive log LLNL-Atlas-2006-2.1-cln.swf, 4.06 MB, md5 de4cc263b5cccb7472ba1fe3142408f5,
#     and a 29,998-job sample of CEA-Curie-2011-2.1-cln on 93,312 processors,
#     experiments/data/CEA-curie_sample/swf_unfiltered/log.swf, md5 6335d7e1e2894ec855f0b8e15528a04f;
#     and the first 4,961 records of the SDSC-SP2 log, simulation/pyss/src/5K_sample,
#     md5 808898d67383467e4e28be2b764798c4)
#   DEEP_BATCH_CLONE: a clone of github.com/DIR-LAB/deep-batch-scheduler (data/lublin_256.swf and
#     data/lublin-aaroh.swf: 10,000 jobs each of the Lublin-Feitelson model on 256 processors,
#     md5 332a32cb1108be21c9ef6d092de20511 and 6455b7254b754a97469883ce72b3fd73)
# Writes llnl-atlas.swf, curie-sample.swf, sdsc-sp2-5k.swf, atlas-x0.85.swf (the same jobs,
# submit times x 0.85: more load),
# lub14.swf (lublin_256 with estimates and users from swf_estimates.py, submit times x 1.4:
# lublin_256 as published keeps its queue growing) and lublin-aaroh-est.swf.
set -eu
ps=$1 db=$2 out=$3
dir=$(dirname "$0")
mkdir -p "$out"
git -C "$ps" show HEAD:simulation/pyss/src/jad/logs/new/LLNL-Atlas-2006-2.1-cln.swf >"$out/llnl-atlas.swf"
git -C "$ps" show HEAD:experiments/data/CEA-curie_sample/swf_unfiltered/log.swf >"$out/curie-sample.swf"
git -C "$ps" show HEAD:simulation/pyss/src/5K_sample >"$out/sdsc-sp2-5k.swf"
git -C "$db" show HEAD:data/lublin_256.swf >"$out/lublin_256.swf"
git -C "$db" show HEAD:data/lublin-aaroh.swf >"$out/lublin-aaroh.swf"
awk '/^;/ { print; next } { $2 = int($2 * 0.85); print }' "$out/llnl-atlas.swf" >"$out/atlas-x0.85.swf"
python3 "$dir/swf_estimates.py" "$out/lublin_256.swf" "$out/lublin256-est.swf"
python3 "$dir/swf_estimates.py" "$out/lublin-aaroh.swf" "$out/lublin-aaroh-est.swf"
awk '/^;/ { print; next } { $2 = int($2 * 1.4); print }' "$out/lublin256-est.swf" >"$out/lub14.swf"
