#!/usr/bin/env bash
# Times whole `c3 estimate` runs (wall time and peak RSS) on generated models:
# a ~550 MB VGG16 with embedded weights and transformer-shaped graphs of 1k,
# 10k and 100k nodes. Models go to ${BENCH_DIR:-/tmp/c3-bench}; nothing is
# committed. Needs Python with `onnx` and `numpy` (pip install onnx numpy).
#   scripts/bench.sh            # all models, best of 5 runs each
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BENCH_DIR:-/tmp/c3-bench}
python=${PYTHON:-python3}
runs=${RUNS:-5}
cargo build --release --quiet
"$python" scripts/gen_bench_models.py "$dir" 1000 10000 100000 >/dev/null
printf '%-26s %12s %10s %14s\n' model bytes "time (s)" "peak RSS (MB)"
for m in vgg16 transformer_1000 transformer_10000 transformer_100000; do
  f="$dir/$m.onnx"
  best_t=999999; best_rss=0
  for _ in $(seq "$runs"); do
    # Costs need numbers; unsupported ops do not stop the run.
    out=$( { /usr/bin/time -f '%e %M' target/release/c3 estimate "$f" --format json -o /dev/null; } 2>&1 >/dev/null | tail -1)
    t=${out% *}; rss=${out#* }
    if awk "BEGIN{exit !($t < $best_t)}"; then best_t=$t; fi
    if [ "$rss" -gt "$best_rss" ]; then best_rss=$rss; fi
  done
  printf '%-26s %12s %10s %14.1f\n' "$m" "$(stat -c %s "$f")" "$best_t" "$(echo "$best_rss/1024" | bc -l)"
done
