"""Output paths (`budget --plot`, `train --out`, `suite --results`, `report --out/--results`)
are checked before any work: exit code 2 and one line naming the option, the path as typed and
why; nothing is created and nothing runs. Exit codes that matter to a shell are read from a
`python -m blocklab` subprocess."""

from __future__ import annotations

import json
import os

import pytest

NAME_MAX = os.pathconf("/tmp", "PC_NAME_MAX")
LONG = "a" * (NAME_MAX + 1)  # one byte past what a name may be


# --- the cases the issue measured ----------------------------------------------------------------
def test_plot_in_a_read_only_working_directory_or_under_a_folder_that_cannot_be_searched(
        tmp_path, blocklab, one_line_exit_2, read_only):
    cwd = read_only(tmp_path / "ro")
    proc = blocklab("budget", "--sweep", "--plot", "fig.png", cwd=cwd, bound_by_modes=True)
    line = one_line_exit_2(proc)
    assert "--plot 'fig.png'" in line and f"the working directory '{cwd}' is not writable" in line
    assert ".tmp" not in line  # the temporary file is blocklab's business, not the user's
    hidden = tmp_path / "hidden"
    hidden.mkdir(mode=0o600)  # readable, not searchable: nothing inside can be reached
    try:
        proc = blocklab("budget", "--sweep", "--plot", str(hidden / "sub" / "x.png"),
                        bound_by_modes=True)
    finally:
        hidden.chmod(0o755)
    assert "cannot be searched" in one_line_exit_2(proc)


DEEP = "/".join(["d" * 200] * (os.pathconf("/tmp", "PC_PATH_MAX") // 200 + 1))


@pytest.mark.parametrize(("argv", "option", "needles"), [
    (["budget", "--sweep", "--plot", f"{LONG}/fig.png"], "--plot", ()),
    (["budget", "--sweep", "--plot", f"{LONG}.png"], "--plot", ()),
    (["train", "--steps", "1", "--no-progress", "--out", f"runs/{LONG}"], "--out", ()),
    (["suite", "ffn", "--tiny", "--results", f"{LONG}/runs"], "--results", ()),
    (["report", "--tiny", "--no-run", "--out", LONG], "--out", ()),
    (["report", "--tiny", "--results", LONG], "--results", ()),
    # a name that fits, but `.NAME.<12 hex>.tmp.png` does not
    (["budget", "--sweep", "--plot", "f" * (NAME_MAX - 10) + ".png"], "--plot",
     ("temporary name", f"at most {NAME_MAX - 22} bytes")),
    (["suite", "ffn", "--tiny", "--results", DEEP], "--results",
     ("characters)", "paths written there are up to")),
], ids=["plot-folder", "plot-file", "train-out", "suite-results", "report-out",
        "report-results", "plot-temporary", "results-past-path-max"])
def test_a_name_too_long_names_the_option(tmp_path, monkeypatch, one_line_exit_2, argv, option,
                                          needles):
    monkeypatch.chdir(tmp_path)
    line = one_line_exit_2(argv, *needles)
    assert line.startswith(f"error: {option} '") and "bytes long" in line
    assert "Errno" not in line and not any(tmp_path.iterdir())  # nothing created


@pytest.mark.parametrize(("command", "locked"), [
    *((["suite", "ffn", "--tiny"], locked) for locked in ("ffn", "ffn/tiny+tuning", "ffn/tiny")),
    (["report", "--tiny", "--out", "{tmp}/report"], "position/tiny"),  # every suite it runs
])
def test_a_suite_folder_not_writable_is_refused_before_training(tmp_path, blocklab,
                                                                one_line_exit_2, read_only,
                                                                command, locked):
    """The results folder is writable, a folder a suite writes under it is not: refused up
    front, naming that folder, instead of failing on a temporary file after a run trained."""
    results = tmp_path / "runs"
    read_only(results / locked)
    proc = blocklab(*(a.format(tmp=tmp_path) for a in command), "--no-progress", "--results",
                    str(results), bound_by_modes=True)
    line = one_line_exit_2(proc)
    assert f"--results '{results}'" in line and f"'{results / locked}' is not writable" in line
    assert not list(results.rglob("*.json")) and not (results / "ffn" / ".lock").exists()
    assert not (tmp_path / "report").exists()


# --- train --config refused: no empty --out folder -----------------------------------------------
@pytest.mark.parametrize(("config", "needle"), [
    ({"model": {"d_model": 32, "n_heads": 3}}, "model.n_heads"),
    # refused where the run starts until now, after --out had been created
    ({"model": {"d_model": 32, "n_heads": 2, "n_layers": 1, "position": "learned",
                "max_seq_len": 64}, "train": {"steps": 1, "seq_len": 128}}, "train.seq_len"),
    ({"model": {"d_model": 32, "n_heads": 2, "n_layers": 1, "vocab_size": 100},
      "train": {"steps": 1, "seq_len": 16, "batch_size": 2}}, "vocab_size=100"),
], ids=["n_heads", "learned-seq_len", "vocab_size"])
def test_train_config_refused_leaves_no_out_folder(tmp_path, one_line_exit_2, config, needle):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(config))
    one_line_exit_2(["train", "--config", str(path), "--no-progress", "--out",
                     str(tmp_path / "out" / "run")], needle)
    assert not (tmp_path / "out").exists()


# --- further unusual output paths ----------------------------------------------------------------
def test_links_folders_and_files_where_they_do_not_belong(tmp_path, monkeypatch,
                                                          one_line_exit_2):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "runs").symlink_to(tmp_path / "gone")
    (tmp_path / "ffn").write_text("")
    plot, suite = ["budget", "--sweep", "--plot"], ["suite", "ffn", "--tiny", "--results"]
    monkeypatch.chdir(tmp_path)  # the path as typed
    one_line_exit_2([*plot, "ffn/sub.png"], "--plot 'ffn/sub.png': 'ffn' is a file")
    one_line_exit_2([*plot, str(tmp_path / "loop" / "x.png")], "--plot",
                    "a loop of symbolic links")
    one_line_exit_2([*plot, str(tmp_path)],
                    f"--plot '{tmp_path}' is a folder; expected a file name", f"{tmp_path}/out.png")
    one_line_exit_2([*suite, str(tmp_path / "runs")], "--results", "is a symbolic link to",
                    "which does not exist")
    one_line_exit_2([*suite, str(tmp_path)], f"--results '{tmp_path}'",
                    f"'{tmp_path / 'ffn'}' is a file")


@pytest.mark.parametrize("argv", [["budget", "--sweep", "--plot"],
                                  ["train", "--steps", "1", "--out"],
                                  ["suite", "ffn", "--tiny", "--results"],
                                  ["report", "--tiny", "--no-run", "--out"]])
@pytest.mark.parametrize(("path", "why"), [("a\0b", "contains a NUL byte"), (" ", "is empty")])
def test_a_nul_byte_or_an_empty_path(one_line_exit_2, argv, path, why):
    """No shell passes a NUL, a caller of `main` can: refused, never a ValueError bug."""
    one_line_exit_2([*argv, path], f"{argv[-1]} ", why)
