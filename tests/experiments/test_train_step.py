"""The one training step: every loop (trainer, suites' timing and fine-tuning, benchmarks) runs
`train_step` with `make_optimizer`, and the step equals a hand-written one."""

import ast
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from blocklab.config import ModelConfig
from blocklab.experiments.trainer import TrainConfig, build_model, make_optimizer, train_step

ROOT = Path(__file__).resolve().parents[2]


def _model(seed: int = 0):
    cfg = ModelConfig(vocab_size=256, d_model=32, n_layers=2, n_heads=2, max_seq_len=16)
    tc = TrainConfig(steps=3, batch_size=2, seq_len=8, seed=seed, lr=1e-2)
    return build_model(cfg, tc), tc


def test_train_step_equals_a_hand_written_step():
    """Reference: cross-entropy, backward, clip to 1.0, AdamW with decay on >= 2-d tensors
    only; parameters after three steps agree to float32 rounding (1e-6)."""
    torch.manual_seed(0)
    batches = [torch.randint(0, 256, (2, 9)) for _ in range(3)]
    ours, tc = _model()
    ref, _ = _model()
    ref.load_state_dict(ours.state_dict())
    optimizer, params = make_optimizer(ours, tc), list(ours.parameters())
    decay = [p for p in ref.parameters() if p.dim() >= 2]
    rest = [p for p in ref.parameters() if p.dim() < 2]
    ref_opt = torch.optim.AdamW([{"params": decay, "weight_decay": tc.weight_decay},
                                 {"params": rest, "weight_decay": 0.0}],
                                lr=tc.lr, betas=tc.betas, eps=tc.adam_eps)
    for batch in batches:
        got = train_step(ours, batch, optimizer, params, lr=tc.lr, grad_clip=1.0)
        loss = F.cross_entropy(ref(batch[:, :-1]).reshape(-1, 256), batch[:, 1:].reshape(-1))
        ref_opt.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(list(ref.parameters()), 1.0)
        ref_opt.step()
        assert got.stepped and got.loss == pytest.approx(loss.item(), rel=1e-6)
        assert got.grad_norm == pytest.approx(float(norm), rel=1e-5)
    for a, b in zip(ours.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


def test_a_refused_loss_or_a_non_finite_gradient_leaves_the_parameters_alone_then_lr_is_set():
    model, tc = _model()
    optimizer, params = make_optimizer(model, tc), list(model.parameters())
    assert [g["weight_decay"] for g in optimizer.param_groups] == [tc.weight_decay, 0.0]
    before = [p.detach().clone() for p in params]
    batch = torch.randint(0, 256, (2, 9))
    result = train_step(model, batch, optimizer, params, lr=tc.lr, grad_clip=1.0,
                        loss_ok=lambda loss: False)
    assert not result.stepped and result.grad_norm is None and math.isfinite(result.loss)
    poison = model.embed_tokens.weight.register_hook(lambda g: g * math.inf)
    result = train_step(model, batch, optimizer, params, lr=tc.lr, grad_clip=1.0)
    poison.remove()
    assert not result.stepped and not math.isfinite(result.grad_norm)
    for a, b in zip(params, before, strict=True):
        assert torch.equal(a, b)
    # on every group; grad_clip None does not clip
    result = train_step(model, batch, optimizer, params, lr=0.25, grad_clip=None)
    assert {g["lr"] for g in optimizer.param_groups} == {0.25}
    assert result.stepped and result.grad_norm > 0


def _optimizer_constructions(path: Path) -> list[int]:
    """Lines that construct a torch optimizer (torch.optim.X(...) or optim.X(...))."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            text = ast.unparse(owner)
            if text in ("torch.optim", "optim") and node.func.attr[:1].isupper():
                lines.append(node.lineno)
    return lines


def test_no_optimizer_is_built_outside_make_optimizer():
    trainer = ROOT / "src" / "blocklab" / "experiments" / "trainer.py"
    found = {}
    for path in [*(ROOT / "src").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]:
        lines = _optimizer_constructions(path)
        if lines and path != trainer:
            found[str(path.relative_to(ROOT))] = lines
    assert found == {}
    assert len(_optimizer_constructions(trainer)) == 1  # make_optimizer's AdamW
