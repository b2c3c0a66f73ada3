#!/usr/bin/env bash
# Runs c3's fuzz targets (fuzz/, cargo-fuzz + libFuzzer) one after another,
# each for a bounded time, and prints one line per target: executions, corpus
# size, coverage and whether anything crashed.
#
#   scripts/fuzz.sh                     # every target, 60 s each
#   scripts/fuzz.sh 1800                # every target, 30 min each
#   scripts/fuzz.sh 600 onnx_model      # one target
#
# Targets: onnx_model (loader checks, shape inference, costing, reports),
# rule_file (formula grammar, YAML rule files, rule evaluation), trace (the
# operator-trace reader, costing, reports), rule_pack, dim_arith, functions
# (model-local functions built from a little program: expansion, names
# that grow with the nesting). Each one calls its function in src/fuzz.rs.
#
# Inputs libFuzzer finds are kept in fuzz/work/TARGET (not committed); it
# starts from the committed seeds in fuzz/corpus/TARGET, plus the ONNX
# conformance models for onnx_model. A crash, a panic, a run over 5 s or over
# 1 GB is written to fuzz/artifacts/TARGET/ and ends that target; replay it
# with `cargo fuzz run TARGET FILE`, then add the file to
# tests/fixtures/fuzz/TARGET/ (tests/fuzz.rs replays every file there).
#
# Targets are built optimized with debug assertions and overflow checks
# (cargo-fuzz's default), so arithmetic that a release build would wrap
# silently into a wrong number is a crash here.
#
# cargo-fuzz needs nightly compiler flags; RUSTC_BOOTSTRAP=1 lets the stable
# toolchain take them. Exits 1 if any target crashed.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(onnx_model rule_file trace rule_pack dim_arith functions)

if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
export RUSTC_BOOTSTRAP=1
cargo fuzz build >/dev/null

failed=0
printf '%-11s %8s %12s %8s %7s %6s  %s\n' target seconds executions exec/s corpus cov result
for t in "${targets[@]}"; do
  work=fuzz/work/$t
  mkdir -p "$work" "fuzz/artifacts/$t"
  seeds=(fuzz/corpus/"$t")
  opts=(-max_len=65536)
  case $t in
    onnx_model) seeds+=(tests/fixtures/onnx-node) ;;
    rule_file) opts=(-max_len=16384 -dict=fuzz/dict/rule_file.dict) ;;
    rule_pack) opts=(-max_len=16384 -dict=fuzz/dict/rule_file.dict) ;;
    dim_arith) opts=(-max_len=512) ;;
    functions) opts=(-max_len=256) ;;
    trace) opts+=(-dict=fuzz/dict/trace.dict) ;;
  esac
  log=fuzz/work/$t.log
  code=0
  cargo fuzz run "$t" "$work" "${seeds[@]}" -- \
    -max_total_time="$secs" -timeout=5 -rss_limit_mb=1024 -malloc_limit_mb=1024 \
    -print_final_stats=1 "${opts[@]}" >"$log" 2>&1 || code=$?
  stat() { awk -v k="$1" '$1 == "stat::" k ":" { print $2 }' "$log" | tail -1; }
  execs=$(stat number_of_executed_units)
  rate=$(stat average_exec_per_sec)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}')
  corpus=$(find "$work" -type f | wc -l)
  result="no crash"
  if [ "$code" -ne 0 ]; then
    result="CRASHED (exit $code): see $log and fuzz/artifacts/$t/"
    failed=1
  fi
  printf '%-11s %8s %12s %8s %7s %6s  %s\n' "$t" "$secs" "${execs:-?}" "${rate:-?}" "$corpus" "${cov:-?}" "$result"
done
exit $failed
