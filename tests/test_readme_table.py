"""The table of bounds (docs/bounds-table.md; the README links to it) is the registry's.

It equals ``theory.complexity.latex_table()``, between its markers, exactly once.
"""

from pathlib import Path

import pytest

from theory import latex_table

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- bounds-table:start -->", "<!-- bounds-table:end -->"


def _between_markers(text: str) -> str:
    assert text.count(START) == 1 and text.count(END) == 1, "exactly one pair of table markers"
    head, rest = text.split(START)
    body, _ = rest.split(END)
    return body.strip()


@pytest.mark.parametrize("path", ["docs/bounds-table.md"])
def test_table_in_sync_with_registry(path):
    text = (ROOT / path).read_text(encoding="utf-8")
    assert _between_markers(text) == latex_table().strip(), (
        f"{path} is out of date: paste the output of `aimc-pipeline bounds --readme-table`"
    )


def test_the_readme_links_to_the_table_and_does_not_copy_it():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert START not in text and "docs/bounds-table.md" in text
