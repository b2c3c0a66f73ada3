#!/usr/bin/env bash
# Writes what c3 prints for every shipped example into a folder, one file per
# command, so two builds can be compared byte for byte:
#   scripts/outputs.sh OUT_DIR [C3_BINARY]        # dump one build
#   scripts/outputs.sh --compare REV [C3_BINARY]  # dump REV (built in a
#                                                 # scratch worktree) and this
#                                                 # build, then diff them
# Every estimate format (table, md, csv, json) of every example model and
# trace, with a device, with the fused and chainer packs, FMA off, all columns,
# summary only; `c3 shapes` (table, json and the written model's bytes);
# `c3 explain` of every rule, and evaluated on a few layers; `c3 rules list`,
# `c3 devices`, `c3 docs`. Exit codes and stderr are kept beside stdout.
#
#   scripts/outputs.sh --normalize-sources DIR...  # rewrite dumps in place
# for comparing builds that moved rules between files: rule source locations
# (`rules/<file>.yaml:<line>`) become RULE, table padding is squeezed (the
# Source column's width follows the longest location), and DETAILS.md keeps
# its introduction and its rule sections sorted by name (no contents, no
# family headings). Then `diff -r` shows what a move cannot explain.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--normalize-sources" ]; then
  shift
  for dir in "$@"; do
    [ -d "$dir" ] || { echo "outputs.sh: no folder $dir" >&2; exit 1; }
    find "$dir" -type f -exec sed -i -E \
      's#rules/[a-z_]+\.yaml:[0-9]+(:[0-9]+)?#RULE#g; s/ +│/ │/g; s/ +┆/ ┆/g; s/─+/─/g; s/═+/═/g' {} +
    if [ -f "$dir/DETAILS.md" ]; then
      python3 - "$dir/DETAILS.md" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
intro, _, rest = text.partition("## Contents")
sections = re.split(r"(?m)^(?=### )", rest)[1:]
sections = sorted(re.sub(r"(?m)^## .*\n\n?", "", s).rstrip("\n") for s in sections)
open(path, "w").write(intro + "\n\n".join(sections) + "\n")
PY
    fi
  done
  exit 0
fi

if [ "${1:-}" = "--compare" ]; then
  rev=${2:?usage: scripts/outputs.sh --compare REV [C3]}
  c3=${3:-target/release/c3}
  if [ -z "${3:-}" ]; then cargo build --release --quiet || exit 1; fi
  scratch=$(mktemp -d)
  trap 'git worktree remove --force "$scratch/tree" >/dev/null 2>&1; rm -rf "$scratch"' EXIT
  git worktree add --detach "$scratch/tree" "$rev" >/dev/null 2>&1 || exit 1
  (cd "$scratch/tree" && CARGO_TARGET_DIR=${BASE_TARGET:-$scratch/target} cargo build --release --quiet) || exit 1
  base_bin=${BASE_TARGET:-$scratch/target}/release/c3
  # The examples of this tree are the inputs of both runs.
  "$0" "$scratch/base" "$base_bin" >/dev/null
  "$0" "$scratch/head" "$c3" >/dev/null
  if diff -r "$scratch/base" "$scratch/head" >"$scratch/diff"; then
    echo "identical: $(find "$scratch/head" -type f | wc -l) outputs"
  else
    head -c 20000 "$scratch/diff"
    echo "outputs differ from $rev"
    exit 1
  fi
  exit 0
fi

out=${1:?usage: scripts/outputs.sh OUT_DIR [C3]}
c3=${2:-target/release/c3}
mkdir -p "$out"
c3=$(realpath "$c3")

# run NAME ARGS...: stdout, stderr and the exit code of one command.
run() {
  local name=$1
  shift
  "$c3" "$@" >"$out/$name.out" 2>"$out/$name.err"
  echo $? >"$out/$name.rc"
}

models=(examples/onnx/*.onnx examples/resnet50.trace.json tests/fixtures/chainer/*.trace.json)
for m in "${models[@]}"; do
  base=$(basename "$m")
  dims=()
  case "$base" in gpt_decoder_*) dims=(--dim batch=2 --dim seq=32) ;; esac
  for f in table md csv json; do
    run "$base.$f" estimate "$m" "${dims[@]}" --format "$f"
  done
  run "$base.h100.md" estimate "$m" "${dims[@]}" --format md --device h100 --measured 2ms
  run "$base.h100.json" estimate "$m" "${dims[@]}" --format json --device h100 --measured 2ms
  run "$base.fp16.md" estimate "$m" "${dims[@]}" --format md --device gtx1080ti --weights fp16 --activations fp16
  run "$base.fused.md" estimate "$m" "${dims[@]}" --format md --rules fused
  run "$base.fused.json" estimate "$m" "${dims[@]}" --format json --rules fused
  run "$base.chainer.md" estimate "$m" "${dims[@]}" --format md --rules chainer
  run "$base.nofma.csv" estimate "$m" "${dims[@]}" --format csv --no-fma --unit none
  run "$base.all.md" estimate "$m" "${dims[@]}" --format md --columns all --digits 1 --unit M
  run "$base.summary.table" estimate "$m" "${dims[@]}" --format table --summary
  run "$base.layers.md" estimate "$m" "${dims[@]}" --format md --layers --attention full
  case "$m" in
    *.onnx)
      run "$base.shapes.table" shapes "$m" "${dims[@]}" --format table
      run "$base.shapes.json" shapes "$m" "${dims[@]}" --format json
      # c3 replaces no existing ONNX file without --force (which older
      # builds do not know): start from none.
      rm -f "$out/$base.annotated.onnx"
      "$c3" shapes "$m" "${dims[@]}" --format json -o "$out/$base.annotated.onnx" >/dev/null 2>&1
      ;;
  esac
done

run rules-list.table rules list --format table
run rules-list.json rules list --format json
run rules-list.chainer rules list --rules chainer --format json
run devices.table devices --format table
run devices.json devices --format json
run docs docs -o "$out/DETAILS.md"
# The folder differs between two runs; what is said about it must not.
sed -i "s#$out/#OUT/#g" "$out/docs.out" "$out/docs.err"
"$c3" rules list --format json 2>/dev/null |
  sed -n 's/.*"op": "\([^"]*\)".*/\1/p' | sort -u | while read -r op; do
    run "explain.$op" explain "$op"
  done
run explain-conv explain Conv --in X=1x3x224x224 --in W=64x3x7x7 --in B=64 --in Y=1x64x112x112 --attr strides=2,2
run explain-matmul explain MatMul --in A=8x128x64 --in B=64x32 --in Y=8x128x32 --no-fma
run explain-relu-pack explain Relu --rules chainer --in X=1x64 --in Y=1x64
echo "$(find "$out" -type f | wc -l) files in $out"
