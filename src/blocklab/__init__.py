"""blocklab: Transformer blocks computed, checked and measured."""

__version__ = "0.1.0"
