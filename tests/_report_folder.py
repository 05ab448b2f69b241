"""The checks of a report folder (``aimc-pipeline report``), shared by tests/test_report.py and the
quick run of every figure in tests/test_figures.py."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.links = [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs["src"])
        elif tag == "a":
            self.links.append(attrs["href"])


def check_folder(out: Path, names) -> tuple[str, str]:
    """Assert the report in ``out`` is complete for the figures ``names``; its Markdown and HTML.

    Every Markdown target is an image or link of the HTML page, is relative and exists; each figure
    has its png (shown) and its pdf, csv and json (linked); the page is self-contained."""
    md = (out / "index.md").read_text()
    page = (out / "index.html").read_text()
    md_targets = re.findall(r"\]\(([^)]+)\)", md)
    parser = _Links()
    parser.feed(page)
    assert sorted(md_targets) == sorted(parser.images + parser.links)
    for target in md_targets:
        assert not Path(target).is_absolute() and (out / target).is_file(), target
    assert sorted(parser.images) == sorted(f"figures/{name}.png" for name in names)
    for name in names:
        for ext in ("png", "pdf", "csv", "json"):
            assert f"figures/{name}.{ext}" in md_targets
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page  # self-contained
    return md, page
