"""The one JSON reader reads strict JSON only (`blocklab.jsonio.parse_json`): NaN, Infinity,
-Infinity, a number too large for a float, a key given twice and a lone surrogate are refused on
one line that names the file and where in it, for a user's config as for a stored result."""

from __future__ import annotations

import json

import pytest

from blocklab.cli import main
from blocklab.errors import InputError, ResultsError
from blocklab.experiments.results import result_json
from blocklab.jsonio import MAX_DEPTH, output_json, parse_json

# (text, what the message must say after "source: ")
NOT_STRICT = [
    ('{"final": {"val_loss": NaN}}', "final.val_loss: NaN is not strict JSON"),
    ('{"a": [1, Infinity]}', "a[1]: Infinity is not strict JSON"),
    ("-Infinity", "-Infinity is not strict JSON"),
    ('{"wall_time_s": 1e999}', "wall_time_s: 1e999 is too large for a float"),
    ('{"x": -1e400}', "x: -1e400 is too large for a float"),
    ('{"hidden_size": 64, "hidden_size": 96}', "key 'hidden_size' is given twice in one object"),
    ('{"model": {"d_model": 64, "n_heads": 2, "d_model": 96}}',
     "model: key 'd_model' is given twice"),
    ('[{"a": 1}, {"b": 1, "b": 1}]', "[1]: key 'b' is given twice"),  # even with equal values
    ('{"reason": "\\ud800"}', "reason: the string '\\ud800' holds a lone surrogate"),
    ('{"\\udfff": 1}', "the key '\\udfff' holds a lone surrogate"),
    ("1" * 5000, "malformed JSON: Exceeds the limit (4300 digits)"),
    # the first problem in document order; a key given twice whose first value repeats a key
    ('{"a": NaN, "b": Infinity}', "a: NaN"),
    ('{"a": [{"k": 1, "k": 2}], "b": NaN}', "a[0]: key 'k'"),
    ('{"a": {"x": 1, "x": 2}, "a": 3}', "key 'a' is given twice"),
]


@pytest.mark.parametrize("text, message", NOT_STRICT)
def test_what_strict_json_does_not_allow_is_refused_saying_where(text, message):
    with pytest.raises(ResultsError) as err:
        parse_json(text, "run.json", ResultsError)
    assert str(err.value).startswith(f"run.json: {message}"), str(err.value)
    assert "\n" not in str(err.value)


def test_strict_json_still_reads_what_blocklab_writes():
    value = {"a": [1.5, -2, 1e300, -1e-300, 0.0, None, True, "ü"], "b": {"c": 10**400}}
    assert parse_json(json.dumps(value), "f") == value
    deepest = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert parse_json(deepest, "f") is not None
    with pytest.raises(InputError, match="nested more than"):
        parse_json("[" + deepest + "]", "f")


def test_blocklab_never_writes_what_it_refuses_to_read():
    """Stored results write a non-finite number as null, `--json` output by name."""
    value = {"x": float("nan"), "y": [float("inf"), -float("inf")], "z": (1,)}
    assert parse_json(result_json(value), "f") == {"x": None, "y": [None, None], "z": [1]}
    assert parse_json(output_json(value), "f") == {"x": "NaN", "y": ["Infinity", "-Infinity"],
                                                   "z": [1]}


def test_every_json_output_is_strict_json(capsys):
    """C10's float16 overflow is an infinite reading: `claims --json` writes it as the string
    "Infinity", so strict parsers (jq, ours) read the whole ledger."""
    assert main(["claims", "C10", "--json"]) == 0
    (row,) = parse_json(capsys.readouterr().out, "claims --json")
    assert row["evidence"]["fp16_mean_square"] == "Infinity"
    for command in (["verify", "--group", "worked", "--json"],
                    ["budget", "meta-llama-3-8b", "--json"], ["claims", "--rules", "--json"]):
        assert main(command) in (0, 1)
        parse_json(capsys.readouterr().out, " ".join(command))
