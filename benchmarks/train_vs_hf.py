"""Training throughput: blocklab DecoderLM vs Hugging Face LlamaForCausalLM, side by side.

Both models have the same Llama architecture (vocab 256, d_model 256, 4 layers, 4 heads,
d_ff 688, RoPE, RMSNorm, SwiGLU), start from the same weights and see the same batches (bytes of
Python standard-library sources, so vocab 256 is exact) in float32 on 2 CPU threads. Each is
trained by blocklab's one training step (`blocklab.experiments.trainer.train_step`: AdamW with
the trainer's parameter groups, gradient clipping), with its own optimizer. Steps alternate
between the two models, in alternating order, so that machine noise hits both alike; warm-up
steps are not timed. Prints tokens/s of each (from the median step, the best step and the
mean), the ratio blocklab / Hugging Face, and both final losses (same weights and data, so they
agree to rounding).

blocklab runs with `packed_qkv` (one q/k/v matmul) by default; `--packed-gate-up` also fuses the
FFN's gate and up matmuls, which on CPU tends to cost more than it saves (its backward has to
concatenate the two output gradients). Both models use SDPA's `is_causal` path without a mask.

    python benchmarks/train_vs_hf.py [--steps 20] [--warmup 3] [--no-packed-qkv] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sysconfig
import time
from pathlib import Path

import torch

from blocklab.config import ModelConfig
from blocklab.experiments.trainer import TrainConfig, make_optimizer, train_step
from blocklab.interop.hf import hf_to_blocklab_name
from blocklab.nn import DecoderLM

SOURCES = ("os.py", "typing.py", "argparse.py", "inspect.py", "dataclasses.py", "pathlib.py")


def corpus() -> torch.Tensor:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    data = b"".join((stdlib / name).read_bytes() for name in SOURCES if (stdlib / name).exists())
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).long()


def batches(data: torch.Tensor, batch: int, seq_len: int, steps: int, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        starts = torch.randint(0, data.numel() - seq_len - 1, (batch,), generator=gen)
        yield torch.stack([data[s:s + seq_len + 1] for s in starts.tolist()])  # [B, T + 1]


# fused tensor -> the separate tensors it stacks, in row order
FUSED = {"attention.qkv_proj.weight": ("attention.q_proj.weight", "attention.k_proj.weight",
                                       "attention.v_proj.weight"),
         "ffn.gate_up_proj.weight": ("ffn.gate_proj.weight", "ffn.up_proj.weight")}


def copy_hf_weights(hf, ours: DecoderLM) -> None:
    """Load the Hugging Face model's weights into ours, stacking the parts ours holds fused."""
    state = {hf_to_blocklab_name(name): t for name, t in hf.state_dict().items()}
    for name in ours.state_dict():
        for fused, parts in FUSED.items():
            if name.endswith(fused):
                prefix = name.removesuffix(fused)
                state[name] = torch.cat([state.pop(prefix + part) for part in parts])
    ours.load_state_dict(state)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per model")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per model")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--packed-qkv", action=argparse.BooleanOptionalAction, default=True,
                        help="one matmul for the q, k, v projections")
    parser.add_argument("--packed-gate-up", action=argparse.BooleanOptionalAction,
                        default=False, help="one matmul for the gate and up projections")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    from transformers import LlamaConfig, LlamaForCausalLM

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=256, d_model=256, n_layers=4, n_heads=4, d_ff=688,
                      max_seq_len=args.seq_len, norm_eps=1e-6)
    hf = LlamaForCausalLM(LlamaConfig(**{k: v for k, v in cfg.to_hf("llama").items()
                                         if k != "architectures"},
                                      attn_implementation="sdpa"))
    ours = DecoderLM(cfg, packed_gate_up=args.packed_gate_up, packed_qkv=args.packed_qkv)
    copy_hf_weights(hf, ours)

    models = {
        "blocklab": lambda ids: ours(ids),
        "hf": lambda ids: hf(input_ids=ids, use_cache=False).logits,
    }
    # Both models take blocklab's training step (AdamW groups, clipping): the step timed is
    # the step trained.
    tc = TrainConfig(lr=1e-3)
    optims = {"blocklab": make_optimizer(ours, tc), "hf": make_optimizer(hf, tc)}
    params = {"blocklab": list(ours.parameters()), "hf": list(hf.parameters())}
    seconds: dict[str, list[float]] = {name: [] for name in models}
    losses = dict.fromkeys(models, float("nan"))
    data = corpus()
    for step, chunk in enumerate(batches(data, args.batch, args.seq_len,
                                         args.warmup + args.steps)):
        # Swap the order every step so that neither model always runs on a cache the other
        # just warmed (or cooled).
        for name in list(models) if step % 2 == 0 else list(models)[::-1]:
            start = time.perf_counter()
            result = train_step(models[name], chunk, optims[name], params[name], lr=tc.lr,
                                grad_clip=tc.grad_clip)
            if step >= args.warmup:
                seconds[name].append(time.perf_counter() - start)
            losses[name] = result.loss

    tokens = args.batch * args.seq_len  # per step
    # The median step resists other processes' bursts on a shared machine, the best step shows
    # each model with the least interference; the mean is the plain throughput over all steps.
    median = {name: tokens / statistics.median(s) for name, s in seconds.items()}
    best = {name: tokens / min(s) for name, s in seconds.items()}
    mean = {name: tokens * len(s) / sum(s) for name, s in seconds.items()}
    result = {
        "config": {"batch": args.batch, "seq_len": args.seq_len, "threads": args.threads,
                   "steps": args.steps, "warmup": args.warmup,
                   "packed_qkv": args.packed_qkv, "packed_gate_up": args.packed_gate_up,
                   "torch": torch.__version__},
        "tokens_per_s": median,
        "tokens_per_s_best": best,
        "tokens_per_s_mean": mean,
        "ratio": median["blocklab"] / median["hf"],
        "ratio_best": best["blocklab"] / best["hf"],
        "ratio_mean": mean["blocklab"] / mean["hf"],
        "final_loss": losses,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for name in models:
        print(f"{name:>9}: {median[name]:7.0f} tokens/s (median step; best {best[name]:.0f}, "
              f"mean {mean[name]:.0f})   final loss {losses[name]:.4f}")
    print(f"    ratio: {result['ratio']:.3f} blocklab / Hugging Face (best: "
          f"{result['ratio_best']:.3f}, mean: {result['ratio_mean']:.3f})")


if __name__ == "__main__":
    main()
