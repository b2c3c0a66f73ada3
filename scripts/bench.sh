#!/usr/bin/env bash
# Times whole `c3 estimate` runs (wall time and peak RSS) on generated models:
# a ~550 MB VGG16 with embedded weights and transformer-shaped graphs of 1k,
# 10k and 100k nodes. Models go to ${BENCH_DIR:-/tmp/c3-bench}; nothing is
# committed. Needs Python with `onnx` and `numpy` (pip install onnx numpy).
#   scripts/bench.sh              # the full report (Markdown), 7 runs each
#   FORMAT=json RUNS=5 scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BENCH_DIR:-/tmp/c3-bench}
python=${PYTHON:-python3}
runs=${RUNS:-7}
format=${FORMAT:-md}
cargo build --release --quiet
"$python" scripts/gen_bench_models.py "$dir" 1000 10000 100000 >/dev/null
printf '%-22s %12s %9s %9s %12s\n' model bytes "best (s)" "median" "peak RSS MB"
for m in vgg16 transformer_1000 transformer_10000 transformer_100000; do
  f="$dir/$m.onnx"
  times=(); max_rss=0
  for _ in $(seq "$runs"); do
    out=$( { /usr/bin/time -f '%e %M' target/release/c3 estimate "$f" --format "$format" -o /dev/null; } 2>&1 >/dev/null | tail -1)
    times+=("${out% *}")
    rss=${out#* }
    if [ "$rss" -gt "$max_rss" ]; then max_rss=$rss; fi
  done
  sorted=$(printf '%s\n' "${times[@]}" | sort -n)
  best=$(echo "$sorted" | head -1)
  median=$(echo "$sorted" | sed -n "$(( (runs + 1) / 2 ))p")
  printf '%-22s %12s %9s %9s %12.1f\n' "$m" "$(stat -c %s "$f")" "$best" "$median" "$(echo "$max_rss/1024" | bc -l)"
done
