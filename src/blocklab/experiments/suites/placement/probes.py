"""Part (a), at initialisation: one gradient probe (a forward and backward pass, per-layer
gradient norms, residual RMS and sensitivity, block Jacobians) and the record it stores."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from blocklab.experiments.env import torch_threads
from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.placement.configs import probe_model_config, train_config
from blocklab.experiments.suites.placement.sizes import DATA, Probe
from blocklab.experiments.summaries import decode


@dataclass(frozen=True)
class ProbeRecord:
    """What one gradient probe at initialisation adds to its RunResult (`extra`; these are the
    keys of its stored JSON). Per layer, bottom first; None in a list stands for a non-finite
    value (stored JSON has no NaN).

    `down_proj_grad`: ‖∇ down_proj.weight‖; `layer_grad`: ‖∇ all of the layer's parameters‖;
    `residual_rms`: the RMS of each layer's output over the batch; `sensitivity`:
    ‖∂L/∂x_l‖·rms(x_l) for the stream x_l ENTERING layer l, then the stream entering the final
    norm (depth + 1 values); `identity_deviation`, `jacobian_gain`: ‖J_l − I‖_F/√n and
    ‖J_l‖_F/√n, J_l the layer's Jacobian at its input in this pass over the first
    `Probe.jacobian_windows` windows, at the deepest probed depth only (None below it);
    `jacobian_s`: the seconds those Jacobians took."""

    placement: str
    init: str
    depth: int
    seed: int
    loss: float | None
    down_proj_grad: list[float | None]
    layer_grad: list[float | None]
    residual_rms: list[float | None]
    sensitivity: list[float | None]
    identity_deviation: list[float | None] | None
    jacobian_gain: list[float | None] | None
    jacobian_s: float

    @classmethod
    def of(cls, result: RunResult, where: str = "probe") -> ProbeRecord:
        """The record a probe's result carries; ResultsError names what does not fit."""
        return decode(cls, result.extra, where)


def init_gradients(placement: str, init: str, depth: int, seed: int, probe: Probe,
                   options: RunOptions) -> RunResult:
    """One forward/backward at initialisation; per-layer gradient norms, residual RMS and the
    residual stream's sensitivity; at the deepest probed depth also each block's Jacobian
    (`blocklab.experiments.jacobian`). The result trains no model: status "ok", wall_time_s and
    a `ProbeRecord` in `extra`."""
    import torch
    import torch.nn.functional as F

    from blocklab.experiments import jacobian
    from blocklab.experiments.data import load_corpus, validation_windows
    from blocklab.experiments.trainer import build_model

    started = time.perf_counter()
    batch = validation_windows(load_corpus(DATA).val, probe.seq_len, probe.batch_size)
    rms: list[float] = []

    def record(module, inputs, output) -> None:
        rms.append(float(output.detach().float().pow(2).mean().sqrt()))

    def loss_of(model) -> torch.Tensor:
        tokens = batch.to(next(model.parameters()).device)
        logits = model(tokens[:, :-1])  # [B, T, V]
        return F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())

    with torch_threads(1):
        model = build_model(probe_model_config(placement, depth, probe),
                            train_config(probe, options, seed, init=init))
        model.train()
        handles = [layer.register_forward_hook(record) for layer in model.layers]
        try:
            loss, sensitivity, inputs = jacobian.residual_sensitivity(model, loss_of)
        finally:
            for handle in handles:
                handle.remove()

        def norm(params) -> float:
            return float(torch.linalg.vector_norm(torch.stack(
                [torch.linalg.vector_norm(p.grad) for p in params if p.grad is not None])))

        down = [norm([layer.ffn.down_proj.weight]) for layer in model.layers]
        whole = [norm(list(layer.parameters())) for layer in model.layers]
        jacobian_started = time.perf_counter()
        sample = [jacobian.LayerInput(i.x[:probe.jacobian_windows], i.kwargs) for i in inputs]
        blocks = (jacobian.layer_deviations(model, sample, probe.jacobian_probes, seed)
                  if depth == max(probe.depths) else None)
        jacobian_s = time.perf_counter() - jacobian_started
    found = ProbeRecord(
        placement=placement, init=init, depth=depth, seed=seed, loss=float(loss),
        down_proj_grad=list(down), layer_grad=list(whole), residual_rms=list(rms),
        sensitivity=list(sensitivity),
        identity_deviation=None if blocks is None else [b.deviation for b in blocks],
        jacobian_gain=None if blocks is None else [b.gain for b in blocks],
        jacobian_s=jacobian_s)
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=asdict(found))
