"""docs/architecture.md lists every module of the four packages once, and none that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("theory", "bounds", "simulate", "paper_figures")


def test_every_module_is_in_the_architecture_page_once():
    text = (ROOT / "docs" / "architecture.md").read_text()
    listed = re.findall(r"^\| `([\w/]+\.py)` \|", text, flags=re.M)
    on_disk = sorted(
        str(p.relative_to(ROOT)) for package in PACKAGES for p in (ROOT / package).rglob("*.py")
    )
    assert len(listed) == len(set(listed)), "a module is listed twice"
    assert sorted(listed) == on_disk, (
        f"missing from docs/architecture.md: {sorted(set(on_disk) - set(listed))}; "
        f"listed but gone: {sorted(set(listed) - set(on_disk))}"
    )
