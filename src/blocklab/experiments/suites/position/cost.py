"""C31's timed run: parameters, training-step and decode-step times and the SDPA kernels of
each position scheme, with the realistic-shape timing (`realistic_cost`) beside them."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from blocklab.experiments.env import torch_threads
from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.position.realistic_cost import (
    time_shapes as time_realistic_shapes,
)
from blocklab.experiments.suites.position.records import CostRun, SchemeKernels, record_extra
from blocklab.experiments.suites.position.sdpa_dispatch import (
    accepted_by,
    sdpa_kernels,
    sdpa_masks,
)
from blocklab.experiments.suites.position.sizes import (
    COST_SCHEMES,
    PARAM_SCHEMES,
    SIZES,
    arm_config,
    train_config,
)


def _decode_call(model, prompt, tokens: int):
    """A function that prefills a fresh KV cache with `prompt` [1, P] (untimed) and returns a
    function decoding `tokens` single tokens, one forward each."""
    import torch

    from blocklab.nn import KVCache

    def start():
        cache = KVCache(model.config.n_layers, max_len=prompt.shape[1] + tokens)
        with torch.no_grad():
            model(prompt, cache=cache)

        def decode():
            with torch.no_grad():
                for i in range(tokens):
                    model(prompt[:, i:i + 1], cache=cache)
        return decode
    return start


def time_position_cost(options: RunOptions, seed: int = 0) -> RunResult:
    """C31: parameters, step times and SDPA kernels of `COST_SCHEMES` on the size's model, in
    `options`' precision and on its backend; the result's `extra` is a `CostRun`.

    Training steps (`trainer.train_step`: forward, backward, clip, AdamW on a batch of the
    size's shape) and decode steps (one token at a time after a prompt of L − decode_tokens
    tokens, KV cache, no grad; seconds per token) of the schemes are interleaved, the order
    rotating by one every repeat; the first `warmup` repeats are not recorded. One thread.
    Kernels: `sdpa_kernels` for a training forward+backward at L and a decode step, and
    whether SDPA restricted to `FLASH_ATTENTION` accepts each call. At this toy shape the
    times measure per-op overhead; "realistic" times prefill and decode at d_model 1024 with a
    1,024-token KV cache (`realistic_cost.time_shapes`; reported, not graded).
    """
    import torch

    from blocklab.budget.params import count_params
    from blocklab.experiments.data import load_corpus, sample_batch
    from blocklab.experiments.trainer import build_model, make_optimizer, train_step

    started = time.perf_counter()
    size = options.size
    config = SIZES[size]
    cost = config.cost
    assert cost is not None, f"size {size} has no timed cost run"
    L, n_decode = config.L, cost.decode_tokens
    corpus = load_corpus("stdlib")
    # this CPU's step and decode times (perf_counter, no device sync): on the CPU whatever
    # --device the models train on
    tc = replace(train_config(options, seed), device="cpu")
    params: dict[str, int] = {}
    params_module: dict[str, int] = {}
    for scheme in PARAM_SCHEMES:
        mc = arm_config(size, scheme)
        params[scheme] = count_params(mc).total
        params_module[scheme] = sum(p.numel() for p in build_model(mc, tc).parameters())
    kernels: dict[str, SchemeKernels] = {}
    with torch_threads(1):
        models = {s: build_model(arm_config(size, s), tc).train() for s in COST_SCHEMES}
        optimizers = {s: make_optimizer(m, tc) for s, m in models.items()}
        weights = {s: list(m.parameters()) for s, m in models.items()}
        prompt = torch.from_numpy(corpus.val[:L].astype(np.int64))[None]  # [1, L]
        for scheme, model in models.items():
            def train_call(model=model):
                model(prompt).float().sum().backward()

            def decode_call(model=model):
                _decode_call(model, prompt[:, :L - n_decode], 1)()()

            model.train()
            train_kernels = sdpa_kernels(train_call)
            train_masks = sdpa_masks(train_call)
            flash_train = accepted_by("FLASH_ATTENTION", train_call)
            model.eval()
            step = _decode_call(model, prompt[:, :L - n_decode], 1)()  # prefilled, untraced
            kernels[scheme] = SchemeKernels(
                train=train_kernels, train_mask=train_masks, flash_train=flash_train,
                decode=sdpa_kernels(step),
                decode_mask=sdpa_masks(_decode_call(model, prompt[:, :L - n_decode], 1)()),
                flash_decode=accepted_by("FLASH_ATTENTION", decode_call))
            model.zero_grad(set_to_none=True)
        train_s: dict[str, list[float]] = {s: [] for s in models}
        decode_s: dict[str, list[float]] = {s: [] for s in models}
        order = list(models)
        for i in range(cost.warmup + cost.repeats):
            batch = sample_batch(corpus.train, seed=seed, step=i, batch_size=tc.batch_size,
                                 seq_len=L)
            for scheme in order[i % len(order):] + order[:i % len(order)]:
                model = models[scheme].train()
                tick = time.perf_counter()
                train_step(model, batch, optimizers[scheme], weights[scheme], lr=tc.lr,
                           grad_clip=tc.grad_clip)  # the trainer's step, timed whole
                step_s = time.perf_counter() - tick
                decode = _decode_call(model.eval(), prompt[:, :L - n_decode], n_decode)()
                tick = time.perf_counter()
                decode()
                token_s = (time.perf_counter() - tick) / n_decode
                if i >= cost.warmup:
                    train_s[scheme].append(step_s)
                    decode_s[scheme].append(token_s)
        realistic = time_realistic_shapes(size, seed)
    record = CostRun(threads=1, L=L, batch_size=tc.batch_size, decode_tokens=n_decode,
                     prompt_tokens=L - n_decode, params=params, params_module=params_module,
                     train_s=train_s, decode_s=decode_s, kernels=kernels, realistic=realistic,
                     repeats=cost.repeats)
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=record_extra("cost", record))

