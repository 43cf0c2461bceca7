#!/bin/sh
# Installs the speaker encoder's weights for syncupsd: Resemblyzer's GE2E encoder (Apache-2.0), from its wheel on
# PyPI, checked by sha256 and converted to the flat file the daemon reads (5.7 MB). No model hub, no torch.
#
#   contrib/voice/install.sh
#
# Directory: $SYNCUPS_VOICE_DIR, else ${XDG_DATA_HOME:-$HOME/.local/share}/syncups/voice, where syncupsd looks
# (ge2e.weights). Python: $PYTHON, else python3 (Debian: pip comes from a venv, so python3-venv).
# Idempotent: when the checked weights are already there it says so and changes nothing.
set -eu

RESEMBLYZER=0.1.4
WHEEL_SHA256=8f12eb2f1a9982d32e8db7856de754709b59c93a77bcf0ff536584b619a9dd1f
WEIGHTS_SHA256=86d041f1e1cdcc6bd3cc0d9f6d5b34a6e2a28c4b3082887a898171bb65d1403e

if [ -n "${SYNCUPS_VOICE_DIR:-}" ]; then
    dir=$SYNCUPS_VOICE_DIR
elif [ -n "${XDG_DATA_HOME:-}" ]; then
    dir=$XDG_DATA_HOME/syncups/voice
else
    dir=${HOME:?set HOME or SYNCUPS_VOICE_DIR}/.local/share/syncups/voice
fi
python=${PYTHON:-python3}
here=$(dirname "$(readlink -f "$0")")
weights=$dir/ge2e.weights

if [ -f "$weights" ] && echo "$WEIGHTS_SHA256  $weights" | sha256sum --check --status; then
    echo "The speaker encoder (resemblyzer $RESEMBLYZER) is already installed in $dir"
    exit 0
fi

mkdir -p "$dir"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
    echo "error: $python cannot make a venv; on Debian/Ubuntu: apt-get install python3-venv" >&2
    exit 1
fi
"$python" -m venv "$scratch/venv"
echo "Fetching resemblyzer $RESEMBLYZER from PyPI"
"$scratch/venv/bin/python3" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    -d "$scratch/wheel" "resemblyzer==$RESEMBLYZER"
wheel=$(ls "$scratch"/wheel/*.whl)
if ! echo "$WHEEL_SHA256  $wheel" | sha256sum --check --status; then
    echo "error: $(basename "$wheel") does not have the sha256 this install was checked with ($WHEEL_SHA256)" >&2
    exit 1
fi
"$python" - "$wheel" "$scratch/pretrained.pt" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel, open(sys.argv[2], "wb") as out:
    out.write(wheel.read("resemblyzer/pretrained.pt"))
PY
"$python" "$here/ge2e_convert.py" "$scratch/pretrained.pt" "$scratch/ge2e.weights"
if ! echo "$WEIGHTS_SHA256  $scratch/ge2e.weights" | sha256sum --check --status; then
    echo "error: the converted weights do not have the sha256 they were checked with ($WEIGHTS_SHA256)" >&2
    exit 1
fi
mv "$scratch/ge2e.weights" "$weights.tmp"
mv "$weights.tmp" "$weights"
echo "Installed the speaker encoder (resemblyzer $RESEMBLYZER, GE2E) in $weights"
