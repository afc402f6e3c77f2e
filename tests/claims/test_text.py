"""The claims' wording catalogue (`claims/wording.toml`)."""

from __future__ import annotations

import re
from pathlib import Path

import blocklab.claims
from blocklab.claims.text import WORDING

TABLE = re.compile(r'^(\w+): [^=]+ = WORDING\["(\w+)"\]$', re.M)
DIRECT = re.compile(r'\bWORDING\["(\w+)"\]\["([^"]+)"\]')  # a key read in place


def test_every_key_a_module_names_is_in_its_catalogue_table():
    # A key missing from the catalogue raises only when its branch runs, perhaps first on a
    # user's results; read every literal key the modules name, run or not.
    used = set()
    for path in Path(blocklab.claims.__file__).parent.glob("*.py"):
        source = path.read_text(encoding="utf-8")
        for name, section in TABLE.findall(source):
            used.add(section)
            for key in re.findall(rf'\b{name}\["([^"]+)"\]', source):
                assert key in WORDING[section], (path.name, section, key)
        for section, key in DIRECT.findall(source):
            used.add(section)
            assert key in WORDING[section], (path.name, section, key)
    assert used == set(WORDING)
    assert all(en for table in WORDING.values() for en, _ in table.values())
