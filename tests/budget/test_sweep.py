"""The page-000 sweep: one quantity varied at a time, plain vs gated, and its plot (matplotlib
loaded for the plot only: tests/test_no_torch.py runs `budget --sweep` forbidding it)."""

import pytest

from blocklab.budget.sweep import PAGE_BASE, plot_sweep, sweep

KEYS = ("batch", "seq_len", "d", "m")


def test_exactly_one_quantity_varies():
    assert PAGE_BASE == {"batch": 2, "seq_len": 1024, "d": 512, "m": 2048}  # page 000's example
    rows = sweep()
    for vary in KEYS:
        part = [r for r in rows if r["vary"] == vary]
        assert len({r[vary] for r in part}) == len(part) >= 3
        for other in KEYS:
            if other != vary:
                assert {r[other] for r in part} == {PAGE_BASE[other]}


def test_what_moves_what():
    for r in sweep():
        assert r["plain_params"] == 2 * r["d"] * r["m"]
        assert r["gated_params"] == 3 * r["d"] * r["m"]
        assert r["plain_intermediate"] == r["batch"] * r["seq_len"] * r["m"]
        assert r["gated_intermediate"] == 2 * r["plain_intermediate"]


def test_base_override():
    rows = sweep({"seq_len": 2048})
    assert {r["seq_len"] for r in rows if r["vary"] != "seq_len"} == {2048}


def test_plot_is_written_atomically_in_a_known_format(tmp_path):
    out = plot_sweep(sweep(), tmp_path / "sweep.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.png"]  # no temporary left behind
    with pytest.raises(ValueError, match="cannot save a plot"):
        plot_sweep(sweep(), tmp_path / "sweep.nope")
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.png"]
