"""A Llama-3-8B-shaped model built on the meta device: costed from its
shapes alone, no weight allocated."""

import json
import subprocess
import sys

import pytest

from conftest import needs_torch

pytestmark = needs_torch

# Run in a process of its own, so that its peak resident size is this
# model's alone, whatever other tests loaded before; it prints the figures
# the test checks as one JSON line.
CHILD = r"""
import json, resource
import torch, transformers as tf
import c3.torch
config = tf.LlamaConfig(
    hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
    num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
)
with torch.device("meta"):
    model = tf.LlamaForCausalLM(config).eval()
    ids = torch.zeros(1, 128, dtype=torch.long)
report = c3.torch.estimate(model, ids, use_cache=False)
linears = sorted(n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear))
by_name = {layer["name"]: layer for layer in report.layers}
attention = [layer for layer in report.layers if layer["op"] == "Attention"]
print(json.dumps({
    "unsupported": report.unsupported,
    "missing": [n for n in linears if n not in by_name][:5],
    "linear_flops": sum(by_name[n]["flops"] for n in linears if n in by_name),
    "attention": len(attention),
    "causal": attention[0]["attrs"]["causal"] if attention else None,
    "kv_shape": attention[0]["inputs"][1]["shape"] if attention else None,
    "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def test_llama3_8b_on_meta_device():
    pytest.importorskip("transformers")
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])

    assert got["unsupported"] == []
    assert got["missing"] == []
    # Per decoder layer, T = 128 tokens, FMA counted once: q and o
    # projections T·4096·4096 each, k and v T·4096·1024 each (8 KV heads of
    # 128), gate, up and down T·4096·14336 each; 32 layers; then the head,
    # T·4096·128256.
    t = 128
    per_layer = t * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
    expected = 32 * per_layer + t * 4096 * 128256
    assert got["linear_flops"] == expected == 960_596_279_296
    # Attention: 32 layers of 32 query heads, causal over 128 tokens.
    assert got["attention"] == 32
    assert got["causal"] == 1
    assert got["kv_shape"] == [1, 8, 128, 128]  # GQA: 8 KV heads
    # Nothing near 8B float32 weights (32 GB) was allocated: the process,
    # torch and transformers included, stays under 2 GB.
    assert got["peak_mb"] < 2048, got["peak_mb"]
