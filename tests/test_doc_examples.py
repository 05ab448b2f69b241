"""Every example of README.md and docs/ runs, and prints what the page shows.

Console examples
    Every fenced ```` ```console ```` block whose first line is ``$ aimc-pipeline ...`` (the format
    is in ``tests/doc_examples.py``). Each command runs in this process through
    ``paper_figures.cli.main`` (the code of this checkout, not an installed script), with a fresh
    temporary folder as the working directory and one temporary ``$AIMC_PIPELINE_CACHE`` for the
    whole module (same seeds give the same bits, so a cached point changes no output); a block
    marked ``<!-- file: NAME -->`` on the line before it is written to ``NAME`` in that folder
    first.
    What the console would show (standard output, then standard error) is compared with the
    lines under the command by doctest's rules with ``ELLIPSIS``: ``...`` in the expected text
    matches any text, a line of it any number of lines. The exit status must be the one the page
    implies: 0, or 2 when the expected text is a one-line ``error:``.

    Normalised before comparing, and nothing else:

    - **paths**: the temporary folder's absolute path, where a command prints it, becomes
      relative (``/tmp/xyz/report/index.md`` -> ``report/index.md``);
    - **timings**: on a ``solve times`` line (``plan``'s wall-clock time of its solvers, the only
      wall-clock time a command prints) every duration ``0.652 s`` becomes ``<t> s``, on both
      sides;
    - trailing spaces at the end of a line, and blank lines at the start and end of the output.

    Pages under ``docs/results/`` are not examples: they are dated records of a measurement, with
    the command that made them, and are not run.

Python examples
    Every ``>>>`` example in a ```` ```pycon ```` block of a page runs with doctest (``ELLIPSIS``),
    in the temporary folder; the examples of one page share their names, in page order.

When a command's output changes on purpose, ``PYTHONPATH=$PWD python tests/doc_examples.py --write
PAGE`` writes today's output into the page (a block with ``...`` is printed instead, to elide by
hand).
"""

from __future__ import annotations

import doctest
import shlex

import doc_examples as ex
import pytest

PAGES = ex.pages()
CONSOLE = [(page, example) for page in PAGES for example in ex.read_page(page).examples]
PYCON = [p for p in PAGES if ">>> " in ex.pycon_text((ex.ROOT / p).read_text(encoding="utf-8"))]


def test_the_examples_are_found():
    """The README has its six console examples and its Python examples; docs/ has more."""
    readme = [example for page, example in CONSOLE if page == "README.md"]
    assert len(readme) >= 6
    assert "README.md" in PYCON
    assert len(CONSOLE) > len(readme)


def test_the_readme_is_an_entrance():
    assert len((ex.ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 300


def test_ci_runs_exactly_the_readme_test_command():
    """.ci/run's last command is the README's "run the tests" line, and the getting-started
    page shows the same line."""
    import re

    def test_line(page):
        text = (ex.ROOT / page).read_text(encoding="utf-8")
        lines = [line for line in text.splitlines()
                 if re.match(r"python -m pip install -e '\.\[test\]' && python -m pytest", line)]
        assert len(lines) == 1, (page, lines)
        return lines[0]

    readme = test_line("README.md")
    assert test_line(".ci/run") == readme
    assert test_line("docs/getting-started.md") == readme


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One result cache for the examples of this module (same seeds, same bits: a cached point is
    what the command would compute), so that a suite shown twice is simulated once."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module", autouse=True)
def _imports():
    """Import the packages once, so that each example's time is its own work."""
    import bounds  # noqa: F401
    import paper_figures.cli  # noqa: F401
    import simulate  # noqa: F401


@pytest.mark.parametrize(
    ("page", "example"), CONSOLE, ids=[f"{page}:{example.line}" for page, example in CONSOLE]
)
def test_console_example(page, example, tmp_path, monkeypatch, cache):
    monkeypatch.setenv("AIMC_PIPELINE_CACHE", str(cache))
    ex.prepare(ex.read_page(page), tmp_path)
    for command in example.commands:
        status, out, err, _ = ex.run_command(command.argv, tmp_path)
        got = ex.normalise(ex.printed(out, err), tmp_path)
        shown = f"$ {ex.PROGRAM} {shlex.join(command.argv)}"
        assert ex.matches(command.expected, got), (
            f"{page}:{example.line}: `{shown}` prints something else now.\n"
            f"--- the page shows:\n{command.expected}\n--- it prints:\n{got}\n"
            f"(paste it, or run PYTHONPATH=$PWD python tests/doc_examples.py --write {page})"
        )
        expected = command.expected.lstrip()
        error = expected.startswith(f"{ex.PROGRAM} ") and " error: " in expected
        assert status == (2 if error else 0), f"{shown}: exit status {status}\n{err}"


def test_a_drifted_example_fails(tmp_path, monkeypatch):
    """The comparison is not vacuous: one changed digit or one missing line is a failure."""
    monkeypatch.setenv("AIMC_PIPELINE_CACHE", str(tmp_path / ".cache"))
    page, example = next((p, e) for p, e in CONSOLE if e.commands[0].argv[0] == "schedule")
    command = example.commands[0]
    _, out, err, _ = ex.run_command(command.argv, tmp_path)
    got = ex.normalise(ex.printed(out, err), tmp_path)
    assert ex.matches(command.expected, got)
    assert not ex.matches(command.expected.replace("0.625", "0.626"), got)
    assert not ex.matches("\n".join(command.expected.splitlines()[:-1]), got)
    assert ex.matches("\n".join(command.expected.splitlines()[:3] + ["..."]), got)


def test_timings_and_paths_only_are_normalised(tmp_path):
    line = "  solve times          exact search 0.652 s (40 partition DPs), relaxation 0.0708 s"
    assert ex.mask_timings(line) == (
        "  solve times          exact search <t> s (40 partition DPs), relaxation <t> s"
    )
    other = "  predicted time       12.79 s"
    assert ex.mask_timings(other) == other
    assert ex.normalise(f"wrote {tmp_path / 'report' / 'index.md'}  \n", tmp_path) == (
        "wrote report/index.md"
    )


@pytest.mark.parametrize("page", PYCON)
def test_python_examples(page, tmp_path, monkeypatch):
    monkeypatch.setenv("AIMC_PIPELINE_CACHE", str(tmp_path / ".cache"))
    monkeypatch.chdir(tmp_path)
    text = ex.pycon_text((ex.ROOT / page).read_text(encoding="utf-8"))
    test = doctest.DocTestParser().get_doctest(text, {}, page, str(ex.ROOT / page), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    runner.run(test, out=report.append)
    assert runner.failures == 0 and runner.tries > 0, "".join(report)
