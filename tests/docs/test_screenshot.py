"""docs/screenshot.py's one-figure page: the report's style and that figure alone."""

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "docs" / "screenshot.py"


def _module():
    spec = importlib.util.spec_from_file_location("_screenshot", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REPORT = ('<html><head><style>body{color:red}</style></head><body><h2>x</h2>'
          '<figure id="fig-a"><img src="data:,A"><figcaption>A</figcaption></figure><p>between'
          '</p><figure id="fig-b"><img src="data:,B"><figcaption>B</figcaption></figure>'
          '</body></html>')


def test_the_page_holds_the_style_and_the_one_figure_and_names_the_ones_it_has():
    page = _module().figure_page(REPORT, "b")
    assert "body{color:red}" in page and '<figure id="fig-b">' in page and "B</figcaption>" in page
    assert "fig-a" not in page and "between" not in page and "<h2>" not in page
    with pytest.raises(ValueError, match=r"no figure 'c'; it has \['a', 'b'\]"):
        _module().figure_page(REPORT, "c")
