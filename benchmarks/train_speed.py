"""Training-step throughput of DecoderLM against transformers' LlamaForCausalLM, on CPU.

Same shapes for both (vocab 256, d_model 256, 4 layers, 4 heads, d_ff 688, T = 256, B = 16,
float32, 2 threads), one process, steps interleaved (ours, HF eager, HF sdpa, ours, ...), the
median step time reported as tokens/s. Also per model: bytes saved for backward in one step
(counted with `torch.autograd.graph.saved_tensors_hooks`, each storage once) and the model
FLOPs utilisation: the step's FLOPs as `FlopCounterMode` counts them (matmuls and attention,
forward and backward) over the step time, as a fraction of a measured float32 matmul rate.
The machine may be shared; the load average is printed with the figures.

    python benchmarks/train_speed.py [--repeats 5]

x-transformers joins the comparison when it is installed (`pip install x-transformers`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from blocklab.config import ModelConfig
from blocklab.nn import DecoderLM

V, D, L, H, DFF, T, B = 256, 256, 4, 4, 688, 256, 16


def _ours() -> torch.nn.Module:
    cfg = ModelConfig(vocab_size=V, d_model=D, n_layers=L, n_heads=H, d_ff=DFF, ffn="swiglu",
                      norm="rmsnorm", position="rope", max_seq_len=T)
    return DecoderLM(cfg)


def _hf(attn: str) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=V, hidden_size=D, num_hidden_layers=L, num_attention_heads=H,
                      intermediate_size=DFF, max_position_embeddings=T,
                      attn_implementation=attn)
    return LlamaForCausalLM(cfg)


def _xtransformers() -> torch.nn.Module | None:
    """The same architecture in x-transformers (pip install x-transformers), or None."""
    try:
        from x_transformers import Decoder, TransformerWrapper
    except ImportError:
        return None
    # ff_mult = 688/256 gives the same SwiGLU width; rotary, RMSNorm, no biases, SDPA.
    return TransformerWrapper(
        num_tokens=V, max_seq_len=T, use_abs_pos_emb=False,
        attn_layers=Decoder(dim=D, depth=L, heads=H, rotary_pos_emb=True, use_rmsnorm=True,
                            ff_glu=True, ff_swish=True, ff_mult=DFF / D, ff_no_bias=True,
                            attn_flash=True))


def _logits(model, ids):
    out = model(ids)
    return out if isinstance(out, torch.Tensor) else out.logits


def _step(model, ids):
    model.zero_grad(set_to_none=True)
    logits = _logits(model, ids[:, :-1])
    F.cross_entropy(logits.reshape(-1, V), ids[:, 1:].reshape(-1)).backward()


def saved_bytes(model, ids) -> int:
    seen: dict[int, int] = {}

    def pack(t):
        s = t.untyped_storage()
        seen[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        _step(model, ids)
    return sum(seen.values())


def step_flops(model, ids) -> int:
    with FlopCounterMode(display=False) as counter:
        _step(model, ids)
    return counter.get_total_flops()


def matmul_rate(repeats: int) -> float:
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t0)
    return 2 * 1024**3 / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(0)
    ids = torch.randint(0, V, (B, T + 1))
    models = {"blocklab": _ours(), "hf_eager": _hf("eager"), "hf_sdpa": _hf("sdpa")}
    xt = _xtransformers()
    if xt is None:
        print("x-transformers is not installed (pip install x-transformers); skipping it")
    else:
        models["x_transf"] = xt
    rate = matmul_rate(5)
    load = os.getloadavg()
    times: dict[str, list[float]] = {k: [] for k in models}
    for m in models.values():
        _step(m, ids)  # warm-up
    for _ in range(args.repeats):
        for name, m in models.items():
            t0 = time.perf_counter()
            _step(m, ids)
            times[name].append(time.perf_counter() - t0)
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"matmul {rate / 1e9:.1f} GFLOP/s (float32, 2 threads)")
    base = statistics.median(times["blocklab"])
    for name, m in models.items():
        t = statistics.median(times[name])
        mfu = step_flops(m, ids) / t / rate
        print(f"{name:>9}: {B * T / t:8.0f} tokens/s  ({base / t:4.2f}× blocklab's step time "
              f"ratio)  saved for backward {saved_bytes(m, ids) / 2**20:7.1f} MiB  "
              f"MFU {mfu:.2f}")


if __name__ == "__main__":
    main()
