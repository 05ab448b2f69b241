"""The one text-table formatter of the package's commands (plain columns and Markdown pipes).

>>> print(text_table(("name", "value"), [("a", "1"), ("bb", "22")]))
name  value
----  -----
a     1
bb    22
>>> print(markdown_table(("name", "value"), [("a", "1")]))
| name | value |
|---|---|
| a | 1 |
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["markdown_table", "text_table"]


def text_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Left-aligned columns two spaces apart, a dashed rule under the header, no trailing blanks."""
    cells = [tuple(str(v) for v in row) for row in (header, *rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
             for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A Markdown pipe table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
