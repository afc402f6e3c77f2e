"""The one switch over how a model computes its ops, modelled on Hugging Face's
`attn_implementation` (`DecoderLM(config, backend=...)`, `--backend`):

    reference  each op its readable expression (`reference_rms_norm`, the gated activation
               φ(gate) · up, `apply_rotary`'s rotation); attention by
               `F.scaled_dot_product_attention`
    fast       eager; each op PyTorch's own library kernel where one computes the same function
               (`F.rms_norm` for an RMSNorm with a plain gain and cast "llama";
               `F.scaled_dot_product_attention` for attention), else the readable expression
    compiled   `torch.compile` over the model: Inductor fuses the reference expressions with
               their neighbours

`DecoderLM.backends()` says what each op ran, and training results record it.
"""

from __future__ import annotations

from blocklab.errors import InputError

BACKENDS = ("reference", "fast", "compiled")


def check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise InputError(f"backend={backend!r} is not allowed; expected one of "
                         f"{list(BACKENDS)}")
    return backend


def check_choice(owner: str, impl: str) -> str:
    """`impl` if it names a backend; else a one-line InputError naming `owner`."""
    if impl not in BACKENDS:
        raise InputError(f"{owner}: impl={impl!r} is not allowed; expected a backend "
                         f"{list(BACKENDS)}")
    return impl
