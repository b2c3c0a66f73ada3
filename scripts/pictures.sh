#!/usr/bin/env bash
# The screenshots in docs/pictures/: c3's HTML report, an annotated model in
# Netron, Model Explorer with c3's node data; each rendered by headless
# Chromium (Debian's `chromium` package) from servers on localhost.
#
#   scripts/pictures.sh [OUT_DIR] [C3]      (defaults: docs/pictures, target/debug/c3)
#
# Needs: apt-get install -y chromium pngquant imagemagick. Netron, Model
# Explorer (with its ONNX adapter) and Playwright (which drives the system
# Chromium and downloads no browser) go into a virtual environment under
# target/, which git ignores.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-docs/pictures}
C3=${2:-target/debug/c3}
VENV=target/pictures-venv
WORK=$(mktemp -d)
mkdir -p "$OUT"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q netron ai-edge-model-explorer model-explorer-onnx playwright
fi
PY="$VENV/bin/python"
[ -x "$C3" ] || cargo build

# Shrinks a screenshot to WIDTH pixels and a small palette, for the repo.
small() { # SRC DEST WIDTH
  convert "$1" -resize "$3x" "$WORK/resized.png"
  pngquant --force --quality 60-85 --output "$2" "$WORK/resized.png"
}

# 1. The HTML report of ResNet-50 on an H100, top of the page (the tables
#    follow below it). The plain command-line screenshot needs no script:
#    it shows the page as it is with JavaScript on.
"$C3" estimate examples/onnx/light_resnet50.onnx --device h100 --format html --force -o "$WORK/report.html"
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$WORK/chromium" --hide-scrollbars \
  --screenshot="$WORK/report.png" --window-size=1280,2350 "file://$WORK/report.html" 2>/dev/null
small "$WORK/report.png" "$OUT/report.png" 900

# 2. Netron on the annotated model, a Conv node's properties open.
"$C3" annotate examples/onnx/light_squeezenet.onnx --device h100 --force -o "$WORK/squeezenet.onnx"
"$VENV/bin/netron" --port 18080 --verbosity quiet "$WORK/squeezenet.onnx" &
pids+=($!)
sleep 3
"$PY" scripts/pictures_shots.py netron http://localhost:18080/ "$WORK/netron.png" Conv
small "$WORK/netron.png" "$OUT/netron.png" 1000

# 3. Model Explorer with the FLOPs of every node as node data.
"$C3" estimate "$WORK/squeezenet.onnx" --device h100 --format model-explorer --metric flops --force \
  -o "$WORK/squeezenet.flops.json"
"$VENV/bin/model-explorer" "$WORK/squeezenet.onnx" --extensions=model_explorer_onnx \
  --node_data_paths="$WORK/squeezenet.flops.json" --no_open_in_browser --skip_health_check \
  --port 18081 > "$WORK/model-explorer.log" 2>&1 &
pids+=($!)
url=""
for _ in $(seq 60); do
  url=$(grep -o 'http://localhost:18081/?data=[^ ]*' "$WORK/model-explorer.log" || true)
  [ -n "$url" ] && break
  sleep 1
done
[ -n "$url" ] || { cat "$WORK/model-explorer.log"; exit 1; }
"$PY" scripts/pictures_shots.py model-explorer "$url" "$WORK/model-explorer.png"
small "$WORK/model-explorer.png" "$OUT/model-explorer.png" 1000

ls -l "$OUT"
