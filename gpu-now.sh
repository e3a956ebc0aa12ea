#!/bin/bash
# one-off device script (untracked)
TESTFLAGS='-test.run=^$' ./scripts/gpu-test tests >/dev/null 2>&1
kv=$PWD/dist/gpu/kvharness
export KVHARNESS_PLUGIN_DIR=$PWD/dist/gpu/plugins
nvidia-smi --query-gpu=name --format=csv,noheader
(cd harness/arena/cudaarena && timeout 150 ../../../dist/gpu/tests/harness.arena.cudaarena.test -test.v -test.count=1 -test.run 'TestChangedIn|TestMatchesSHM|TestManyChanged' > $OUT/cudaarena.txt 2>&1; echo "cudaarena rc=$?")
grep -E "^(--- |ok|PASS|FAIL)" $OUT/cudaarena.txt
t0=$SECONDS; timeout -s QUIT 280 $kv mutants --backend cuda --graph --timings --plugin fusedstore > $OUT/mut.txt 2> $OUT/mut.err; echo "mutants rc=$? $((SECONDS-t0)) s"
tail -60 $OUT/mut.txt
for l in "vllm-flash --heads 8" bf16; do t0=$SECONDS; timeout 80 $kv check --plugin fusedstore --backend cuda --layout $l --head-dim 128 --cases 2000 --timings > $OUT/rate-${l%% *}.txt 2>&1; echo "rate $l rc=$? $((SECONDS-t0)) s"; tail -25 $OUT/rate-${l%% *}.txt; done
