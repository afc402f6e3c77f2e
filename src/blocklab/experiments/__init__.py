"""Seeded, deterministic, resumable training experiments on built-in data."""
