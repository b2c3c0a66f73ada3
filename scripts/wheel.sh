#!/usr/bin/env bash
# Builds the Python package's wheel (import name `c3`; one abi3 wheel serves
# CPython 3.9 and later) with maturin, and with --install installs it into
# the Python that runs this script, with the extras named after it.
#
#   scripts/wheel.sh                    # build target/py-wheels/c3-*-abi3-*.whl (release)
#   scripts/wheel.sh --install torch    # build, then pip install "WHEEL[torch]"
#   scripts/wheel.sh --install torch,pandas
#   scripts/wheel.sh --install ""       # the package alone
#   C3_WHEEL_PROFILE=dev scripts/wheel.sh   # a debug build (what scripts/test.sh tests)
#
# The wheel is a plain file: copied to another machine of the same platform,
# `pip install c3-*.whl` needs no Rust there. Building needs cargo and a
# Python with pip; maturin is installed into that Python when it lacks it.
# PYTHON names the interpreter (default python3); the path of the wheel is
# the last line printed.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
# A relative path names a file from here; the build runs in python/.
[[ $python == */* && $python != /* ]] && python=$PWD/$python
profile=${C3_WHEEL_PROFILE:-release}
install=0
extras=""
while (($#)); do
  case $1 in
    --install)
      install=1
      if (($# < 2)); then
        echo "scripts/wheel.sh: --install needs the extras to install with (torch, torch,pandas, or \"\")" >&2
        exit 1
      fi
      extras=$2
      shift 2
      ;;
    *)
      echo "scripts/wheel.sh: unknown argument '$1' (expected --install EXTRAS)" >&2
      exit 1
      ;;
  esac
done
pip=("$python" -m pip install --disable-pip-version-check)

if ! "$python" -m maturin --version >/dev/null 2>&1; then
  "${pip[@]}" --quiet "maturin>=1.5,<2"
fi
out=target/py-wheels
# One wheel in the folder, so that the one installed is the one just built.
rm -rf "$out"
(cd python && "$python" -m maturin build --quiet --profile "$profile" --out "../$out" >&2)
wheels=("$out"/c3-*-abi3-*.whl)
if [[ ${#wheels[@]} -ne 1 || ! -f ${wheels[0]} ]]; then
  echo "scripts/wheel.sh: maturin made no abi3 wheel in $out" >&2
  exit 1
fi
wheel=${wheels[0]}
if ((install)); then
  # --force-reinstall --no-deps replaces an earlier build of the same
  # version; the extras' packages are installed by a second call, so that a
  # present torch is not reinstalled.
  "${pip[@]}" --quiet --force-reinstall --no-deps "$wheel"
  if [[ -n $extras ]]; then
    "${pip[@]}" --quiet "$wheel[$extras]"
  fi
fi
echo "$wheel"
