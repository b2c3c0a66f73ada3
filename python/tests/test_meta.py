"""A Llama-3-8B-shaped model built on the meta device: costed from its
shapes alone, no weight allocated."""

import resource
import time

import pytest

from conftest import needs_torch

pytestmark = needs_torch


def test_llama3_8b_on_meta_device():
    import torch

    import c3.torch

    tf = pytest.importorskip("transformers")
    start = time.monotonic()
    config = tf.LlamaConfig(
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
    )
    with torch.device("meta"):
        model = tf.LlamaForCausalLM(config).eval()
        ids = torch.zeros(1, 128, dtype=torch.long)
    report = c3.torch.estimate(model, ids, use_cache=False)
    elapsed = time.monotonic() - start

    assert report.unsupported == []
    linears = {n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    by_name = {layer["name"]: layer for layer in report.layers}
    assert linears <= set(by_name), sorted(linears - set(by_name))[:5]
    # Per decoder layer, T = 128 tokens, FMA counted once: q and o
    # projections T·4096·4096 each, k and v T·4096·1024 each (8 KV heads of
    # 128), gate, up and down T·4096·14336 each; 32 layers; then the head,
    # T·4096·128256.
    t = 128
    per_layer = t * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
    expected = 32 * per_layer + t * 4096 * 128256
    assert sum(by_name[n]["flops"] for n in linears) == expected == 960_596_279_296
    # Attention: 32 layers of 32 query heads, causal over 128 tokens.
    attention = [layer for layer in report.layers if layer["op"] == "Attention"]
    assert len(attention) == 32
    assert attention[0]["attrs"]["causal"] == 1
    assert attention[0]["inputs"][1]["shape"] == [1, 8, 128, 128]  # GQA: 8 KV heads
    # Nothing near 8B float32 weights (32 GB) was allocated: the whole
    # process, torch and transformers included, stays under 2 GB.
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert peak_mb < 2048, peak_mb
    assert elapsed < 120, elapsed
