"""C29, order without positions: how much a model's next-token distribution moves when a
prefix is reversed."""

from __future__ import annotations


def reversed_prefixes(rows):
    """Each row [N, k] with its first k − 1 tokens reversed and its last token kept:
    (x_1, …, x_k) -> (x_(k−1), …, x_1, x_k). The same bag of tokens and the same token being
    read, so a model without position information whose output at a position depended only on
    that bag (bidirectional attention) would predict the same next token from both."""
    import torch

    return torch.cat((rows[:, :-1].flip(1), rows[:, -1:]), dim=1)


def order_probe(model, val_tokens, prefix_len: int, prefixes: int) -> dict[str, float]:
    """How much `model`'s next-token distribution moves when a prefix is reversed (C29).

    `prefixes` fixed validation windows of `prefix_len` tokens x; p = softmax(logits after x),
    q = the same after `reversed_prefixes(x)`, both in float64. Returns the means over the
    prefixes of the total-variation distance TV = ½ Σ_v |p_v − q_v| (in [0, 1]) and of
    KL(p ‖ q) in nats.
    """
    import torch

    from blocklab.experiments.data import validation_windows

    rows = validation_windows(val_tokens, prefix_len - 1, prefixes)  # [N, prefix_len]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            device = next(model.parameters()).device
            logits = model(torch.cat((rows, reversed_prefixes(rows))).to(device))[:, -1]
            logits = logits.double().cpu()
    finally:
        model.train(was_training)
    log_p, log_q = logits.log_softmax(-1).chunk(2)  # [N, V] each
    tv = 0.5 * (log_p.exp() - log_q.exp()).abs().sum(-1)
    kl = (log_p.exp() * (log_p - log_q)).sum(-1)
    return {"tv": float(tv.mean()), "kl": float(kl.mean()), "prefix_len": prefix_len,
            "prefixes": prefixes}

