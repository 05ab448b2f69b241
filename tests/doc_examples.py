"""Read and run the examples of README.md and docs/ (used by tests/test_doc_examples.py).

A *console example* is a fenced block opened by a line ```` ```console ```` whose first line starts
with ``$ aimc-pipeline``. It holds one or more commands, each a line ``$ aimc-pipeline ARGS``
(continued onto the next line by a trailing ``\\``), followed by the output the command prints on
standard output. A fenced block preceded by the line ``<!-- file: NAME -->`` is written to ``NAME``
in the example's working folder before the page's console examples run (a hardware TOML, say).

Run by hand to see what the examples print today, or to write today's output into the pages
(``--write``: a command whose expected output has no ``...`` gets what it prints now, in place; one
with ``...`` is left for a person to elide again and is printed)::

    PYTHONPATH=$PWD python tests/doc_examples.py README.md docs/guide/bounds.md
    PYTHONPATH=$PWD python tests/doc_examples.py --write README.md
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = "aimc-pipeline"
#: pages whose blocks are dated records of a measurement (docs/results/), not examples
RECORD_DIRS = ("docs/results",)
FILE_MARK = re.compile(r"^<!-- file: (\S+) -->\s*$")
FENCE = re.compile(r"^(`{3,})(\S*)\s*$")
#: the one line of wall-clock time a command prints: ``plan``'s "  solve times  exact search 0.652 s
#: (40 partition DPs), relaxation 0.0708 s"
TIMED_LINE = re.compile(r"^\s*solve times\b.*$", re.M)
DURATION = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)? s\b")


@dataclass
class Command:
    argv: list[str]
    expected: str


@dataclass
class Example:
    path: str
    line: int
    commands: list[Command]


@dataclass
class Page:
    path: str
    examples: list[Example] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)


def pages() -> list[str]:
    """README.md and every Markdown page of docs/ but the dated records, repository-relative."""
    found = ["README.md"]
    for path in sorted((ROOT / "docs").rglob("*.md")):
        rel = path.relative_to(ROOT).as_posix()
        if "_build" in rel or any(rel.startswith(d + "/") for d in RECORD_DIRS):
            continue
        found.append(rel)
    return found


def _blocks(text: str):
    """(info string, first line number, body lines, the line before the fence) of every fence."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        ticks, info = match.groups()
        start, body = i, []
        i += 1
        while i < len(lines) and lines[i].strip() != ticks:
            body.append(lines[i])
            i += 1
        before = lines[start - 1] if start > 0 else ""
        yield info, start + 1, body, before
        i += 1


def parse_console(body: list[str]) -> list[Command]:
    """Split one console block into its commands and their expected output."""
    commands: list[Command] = []
    i = 0
    while i < len(body):
        line = body[i]
        if not line.startswith("$ "):
            raise ValueError(f"console block line {i + 1}: output before any '$ ' command")
        command = line[2:]
        while command.endswith("\\"):
            i += 1
            command = command[:-1] + " " + body[i].strip()
        argv = shlex.split(command)
        if argv[0] != PROGRAM:
            raise ValueError(f"console block: only '{PROGRAM}' commands are run, not {argv[0]!r}")
        i += 1
        out = []
        while i < len(body) and not body[i].startswith("$ "):
            out.append(body[i])
            i += 1
        commands.append(Command(argv[1:], "\n".join(out)))
    return commands


def read_page(rel: str) -> Page:
    page = Page(rel)
    text = (ROOT / rel).read_text(encoding="utf-8")
    for info, line, body, before in _blocks(text):
        mark = FILE_MARK.match(before)
        if mark:
            page.files[mark.group(1)] = "\n".join(body) + "\n"
        if info == "console" and body and body[0].startswith(f"$ {PROGRAM}"):
            page.examples.append(Example(rel, line, parse_console(body)))
    return page


def pycon_text(text: str) -> str:
    """The page with every line outside a ```` ```pycon ```` block blanked (line numbers kept)."""
    lines = text.splitlines()
    keep = [""] * len(lines)
    for info, line, body, _ in _blocks(text):
        if info == "pycon":
            keep[line:line + len(body)] = body
    return "\n".join(keep) + "\n"


def normalise(text: str, folder: Path) -> str:
    """What is compared: paths under the working folder made relative, trailing spaces dropped."""
    text = text.replace(str(folder) + os.sep, "").replace(str(folder), ".")
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def mask_timings(text: str) -> str:
    """On the wall-clock lines (:data:`TIMED_LINE`) every duration ``0.652 s`` becomes ``<t> s``."""
    return TIMED_LINE.sub(lambda m: DURATION.sub("<t> s", m.group(0)), text)


def run_command(argv: list[str], folder: Path) -> tuple[int, str, str, float]:
    """Run ``aimc-pipeline ARGV`` in this process with ``folder`` as the working directory."""
    from paper_figures.cli import main

    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    start = time.perf_counter()
    try:
        os.chdir(folder)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(list(argv))
            except SystemExit as stop:  # argparse's --help or a usage error
                status = stop.code if isinstance(stop.code, int) else 1
    finally:
        os.chdir(here)
    return status, out.getvalue(), err.getvalue(), time.perf_counter() - start


def printed(out: str, err: str) -> str:
    """What a console shows: standard output, then standard error (a one-line user error)."""
    return out + err


CHECKER = doctest.OutputChecker()


def matches(expected: str, actual: str) -> bool:
    """Doctest's rules with ELLIPSIS: ``...`` matches any text, a line of it any lines."""
    want = mask_timings(expected) + "\n"
    got = mask_timings(actual) + "\n"
    return CHECKER.check_output(want, got, doctest.ELLIPSIS)


def prepare(page: Page, folder: Path) -> None:
    for name, content in page.files.items():
        (folder / name).write_text(content, encoding="utf-8")


def rewrite(rel: str, actual: dict[tuple[int, int], str]) -> None:
    """Write ``actual[(block line, command index)]`` as those commands' output in page ``rel``."""
    path = ROOT / rel
    lines = path.read_text(encoding="utf-8").split("\n")
    for info, line, body, _ in sorted(_blocks("\n".join(lines)), key=lambda b: -b[1]):
        if info != "console" or not body or not body[0].startswith(f"$ {PROGRAM}"):
            continue
        commands = parse_console(body)
        new, i, index = [], 0, 0
        while i < len(body):
            start = i
            while body[i].endswith("\\"):
                i += 1
            new.extend(body[start:i + 1])
            i += 1
            old = []
            while i < len(body) and not body[i].startswith("$ "):
                old.append(body[i])
                i += 1
            got = actual.get((line, index))
            keep = got is None or "..." in commands[index].expected
            new.extend(old if keep else ([got] if got else []))
            index += 1
        lines[line:line + len(body)] = new
    path.write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    import tempfile

    write = "--write" in sys.argv
    names = [a for a in sys.argv[1:] if a != "--write"]
    for rel in names or pages():
        page = read_page(rel)
        actual = {}
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            os.environ["AIMC_PIPELINE_CACHE"] = str(folder / ".cache")
            prepare(page, folder)
            for example in page.examples:
                for index, command in enumerate(example.commands):
                    status, out, err, seconds = run_command(command.argv, folder)
                    got = normalise(printed(out, err), folder)
                    actual[(example.line, index)] = got
                    ok = matches(command.expected, got)
                    print(f"==== {rel}:{example.line} [{seconds:.1f} s, exit {status}, "
                          f"{'same' if ok else 'DIFFERS'}] $ {PROGRAM} {shlex.join(command.argv)}")
                    if not ok:
                        print(got)
        if write:
            rewrite(rel, actual)
