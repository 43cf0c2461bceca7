#!/usr/bin/env python3
"""The reference check of syncupsd's Swift speaker encoder: Resemblyzer's own code, on the same audio.

    reference.py WHEEL_DIR SYNCUPS_VOICE WEIGHTS RAW...

Runs the wheel's `embed_utterance` (its partial slicing, its librosa mel frontend, its averaging) with the
network's forward pass done in numpy from the wheel's pretrained.pt (PyTorch's LSTM equations; PyTorch itself
is a 2 GB install this check does without), and `syncups-voice embed` on the same 16 kHz raw files; prints the
cosine of each pair and exits 1 if any is below 0.999. Needs numpy and librosa (a venv of test tooling).
"""
import os
import subprocess
import sys
import types

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import ge2e_convert  # noqa: E402


def stub_modules():
    """The wheel imports torch and webrtcvad at the top; the parts used here need neither."""
    torch = types.ModuleType("torch")

    class NoGrad:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class Array(np.ndarray):
        def to(self, device):
            return self

        def cpu(self):
            return self

        def numpy(self):
            return np.asarray(self)

    torch.no_grad = NoGrad
    torch.from_numpy = lambda a: a.view(Array)
    torch.FloatTensor = np.ndarray

    class Tensor:  # scipy and librosa ask whether an array is a torch tensor: none is
        pass

    torch.Tensor = Tensor
    torch.device = lambda name: name
    nn = types.ModuleType("torch.nn")
    nn.Module = object
    torch.nn = nn
    sys.modules["torch"] = torch
    sys.modules["torch.nn"] = nn
    sys.modules["webrtcvad"] = types.ModuleType("webrtcvad")
    try:
        import scipy.ndimage.morphology  # noqa: F401
    except ImportError:
        import scipy.ndimage
        morphology = types.ModuleType("scipy.ndimage.morphology")
        morphology.binary_dilation = scipy.ndimage.binary_dilation
        sys.modules["scipy.ndimage.morphology"] = morphology
    return Array


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def forward(state, mels):
    """VoiceEncoder.forward: nn.LSTM(40, 256, 3, batch_first=True), linear, ReLU, L2 norm."""
    x = mels.astype(np.float64)
    for layer in range(3):
        w_ih = np.asarray(state[f"lstm.weight_ih_l{layer}"].values(), np.float64).reshape(1024, -1)
        w_hh = np.asarray(state[f"lstm.weight_hh_l{layer}"].values(), np.float64).reshape(1024, 256)
        b = np.asarray(state[f"lstm.bias_ih_l{layer}"].values(), np.float64) + np.asarray(
            state[f"lstm.bias_hh_l{layer}"].values(), np.float64)
        batch, frames, _ = x.shape
        h = np.zeros((batch, 256))
        c = np.zeros((batch, 256))
        outputs = np.zeros((batch, frames, 256))
        for t in range(frames):
            gates = x[:, t] @ w_ih.T + h @ w_hh.T + b
            i, f, g, o = np.split(gates, 4, axis=1)
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
            h = sigmoid(o) * np.tanh(c)
            outputs[:, t] = h
        x = outputs
    w = np.asarray(state["linear.weight"].values(), np.float64).reshape(256, 256)
    bias = np.asarray(state["linear.bias"].values(), np.float64)
    raw = np.maximum(0, h @ w.T + bias)
    return raw / np.linalg.norm(raw, axis=1, keepdims=True)


def main():
    wheel, tool, weights, *raws = sys.argv[1:]
    array_type = stub_modules()
    sys.path.insert(0, wheel)
    from resemblyzer import voice_encoder

    state = ge2e_convert.load_legacy(os.path.join(wheel, "resemblyzer", "pretrained.pt"))["model_state"]
    encoder = object.__new__(voice_encoder.VoiceEncoder)
    encoder.device = "cpu"
    voice_encoder.VoiceEncoder.__call__ = lambda self, mels: forward(state, np.asarray(mels)).view(array_type)

    swift = subprocess.run([tool, "embed", weights, *raws], check=True, capture_output=True, text=True).stdout
    worst = 1.0
    for path, line in zip(raws, swift.splitlines()):
        wav = np.fromfile(path, dtype="<i2").astype(np.float32) / 32767
        reference = encoder.embed_utterance(wav)
        mine = np.array([float(v) for v in line.split()])
        cos = float(reference @ mine / np.linalg.norm(reference) / np.linalg.norm(mine))
        worst = min(worst, cos)
        print(f"{os.path.basename(path)}: {len(wav) / 16000:.2f} s, cosine {cos:.6f}")
    print(f"worst cosine {worst:.6f}")
    sys.exit(0 if worst >= 0.999 else 1)


if __name__ == "__main__":
    main()
