"""The console script starts fast: ``--help`` and a bad flag import neither sympy, cvxpy nor numba.

Each case runs in a fresh interpreter (the test process has them all loaded) and reports which of
the heavy modules ``sys.modules`` holds after the command returned. The theory side is lazy: the
package re-exports on first use and builds the theorem registry on first use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("sympy", "cvxpy", "numba")

_PROBE = textwrap.dedent("""
    import contextlib, io, json, sys
    {setup}
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            status = {call}
        except SystemExit as stop:
            status = stop.code
    print(json.dumps({{"status": status, "heavy": sorted(m for m in {heavy!r} if m in sys.modules),
                      "output": out.getvalue()}}))
""")


def _probe(call: str, setup: str = "") -> dict:
    """Run ``call`` in a fresh interpreter; its exit status, output and heavy modules."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    code = _PROBE.format(setup=setup, call=call, heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def _main(argv: list[str]) -> dict:
    return _probe(f"main({argv!r})", setup="from paper_figures.cli import main")


#: every command of the dispatcher (each checked in a fresh interpreter)
COMMANDS = ("bounds", "plan", "figures", "report", "simulate", "verify", "schedule",
            "pulse-response", "calibrate")


def test_every_command_has_a_case():
    from paper_figures.cli import COMMANDS as DISPATCHED

    assert sorted(COMMANDS) == sorted(DISPATCHED)


@pytest.mark.parametrize("argv", [["--help"], [], ["no-such-command"]], ids=str)
def test_the_dispatcher_imports_no_heavy_module(argv):
    found = _main(argv)
    assert found["status"] == (2 if argv == ["no-such-command"] else 0)
    assert found["heavy"] == []
    assert "usage: aimc-pipeline COMMAND" in found["output"] or "unknown command" in found["output"]


@pytest.mark.parametrize("command", COMMANDS)
def test_command_help_imports_no_heavy_module(command):
    found = _main([command, "--help"])
    assert found["status"] == 0 and f"usage: aimc-pipeline {command}" in found["output"]
    assert found["heavy"] == []


@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_flag_exits_2_without_a_heavy_module(command):
    found = _main([command, "--no-such-flag"])
    assert found["status"] == 2 and "--no-such-flag" in found["output"]
    assert found["heavy"] == []


def test_the_theory_vocabulary_needs_no_sympy():
    found = _probe("0", setup=textwrap.dedent("""
        import theory, theory.commands, theory.errors, theory.vocabulary
        from theory import MODES, ALGORITHMS, WRITE_SEMANTICS, TRANSFER_SLICES, devices
        from theory import CALIBRATED_ALGORITHMS, CALIBRATED_MODES
        from theory import PARAMETER_RANGES, ParameterError, check_range, strict_json
        assert "sympy" not in sys.modules, "import"
        assert "reram-softbounds" in devices.list_presets() and MODES == theory.MODES
    """))
    assert found["status"] == 0 and found["heavy"] == []


def test_the_registry_is_built_on_first_use_once():
    found = _probe("0", setup=textwrap.dedent("""
        import theory.theorems as theorems
        assert theorems.registry.cache_info().currsize == 0, "built at import"
        assert "REGISTRY" not in vars(theorems)
        first = theorems.REGISTRY
        assert first is theorems.registry() is theorems.registry()
        assert theorems.registry.cache_info().misses == 1
        from theory import REGISTRY
        assert REGISTRY is first and theorems.get_bound("analog_sgd") is first["analog_sgd"]
    """))
    assert found["status"] == 0 and found["heavy"] == ["sympy"]


def test_the_theory_api_lists_what_it_gives():
    import theory
    import theory.devices

    for package in (theory, theory.devices):
        assert package.__all__ == sorted(package.__all__)
        assert set(package.__all__) <= set(dir(package))
        with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
            package.no_such_name  # noqa: B018
    assert theory.MODES is theory.schedules.MODES is theory.vocabulary.MODES
    assert theory.devices.list_presets is theory.vocabulary.list_presets
