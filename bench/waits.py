"""The waits a user feels (issue 28 item 3), as seconds and as ratios to a reference run.

Run from the repository root: ``python -m bench.waits [--only NAME[,NAME]] [--jobs N]
[--checkout DIR] [--record FILE]`` or ``python -m bench.waits --profile NAME``.

The waits, each one ``aimc-pipeline`` command run in a fresh process with a fresh result cache
(``--cache-dir`` in a temporary folder, so no sweep point is reused; numba's compiled kernels
stay in their own on-disk cache, so a first-ever run pays 2-3 s more of compilation):

- ``verify``: ``verify --suite standard``;
- ``figures``: ``figures all --quick``;
- ``speedup``: ``figures speedup`` (the full speedup study, no ``--quick``);
- ``calibrate``: ``calibrate`` with its defaults.

Each runs on ``--jobs`` workers (default 2) and its wall-clock seconds are printed with the ratio
to a reference measured in this process first: one fixed small digits-MLP training run of 2,000
samples (the unit of work of ``bench/bench_figures.py``), the minimum of 3 after a warm-up. The
ratios are what compare across machines; nothing is asserted (the machine may be shared). The
reference is measured again right before each wait (its ratio uses that one), and each wait's
CPU seconds (user + system of its process tree, the pool workers included) are printed beside
its seconds: on a shared machine they move less than the wall-clock time.

``--checkout DIR`` times the commands of another checkout of the repository (for example
``git worktree add --detach DIR COMMIT``): the waits import the package from ``DIR`` (first on
``PYTHONPATH``), while the reference run stays this checkout's, so that the ratios of two
checkouts timed alternately share one yardstick. The commands must exist there; the record
names the checkout's commit.

``--profile NAME`` runs one wait in this process under :mod:`cProfile` with ``--jobs 1`` and prints
the 25 entries of largest cumulative time, each labelled with its group (simulation steps,
measurement, sympy / registry, plotting, bootstrap, ...), and the self time per group, which adds
up to the whole run: that is where the time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulate import SimConfig, run  # noqa: E402

REFERENCE = SimConfig(problem="digits-mlp", mode="none", algorithm="analog", stages=4,
                      micro_batches=1, micro_batch_size=16, steps=125, lr=0.05, seeds=1)

#: the console script, run as ``python -c`` (``python -m paper_figures`` is the figures command)
_CLI = "import sys; from paper_figures.cli import main; sys.exit(main(sys.argv[1:]))"
# name -> (description, aimc-pipeline arguments; OUT is replaced by a temporary output folder)
WAITS: dict[str, tuple[str, list[str]]] = {
    "verify": ("verify --suite standard", ["verify", "--suite", "standard"]),
    "figures": ("figures all --quick", ["figures", "all", "--quick", "--out", "OUT"]),
    "speedup": ("figures speedup (full)", ["figures", "speedup", "--out", "OUT"]),
    "calibrate": ("calibrate (defaults)", ["calibrate"]),
}

# (group, substrings of "file:function", first match wins); self time is summed per group
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("bootstrap / statistics", ("bootstrap", "resampl", "scipy/stats")),
    ("measurement (loss, accuracy, grad norm)", ("measure", "_measure", "cross_entropy",
                                                  "accuracy", "grad_norm")),
    ("sympy / registry / theory", ("sympy", "theory/", "bounds/", "registry", "lambdify")),
    ("plotting (matplotlib)", ("matplotlib", "PIL", "fontTools", "kiwisolver")),
    ("numba compile / load", ("numba", "llvmlite")),
    ("simulation steps (device, network, pipeline)", ("simulate/device", "simulate/problems",
                                                      "simulate/pipeline", "simulate/algorithms",
                                                      "simulate/core", "simulate/engine",
                                                      "numpy/linalg", "step")),
    ("sweep / cache / io", ("simulate/execution", "json", "hashlib", "pickle", "pathlib",
                            "csv", "io.")),
    ("calibration fit", ("calibrat", "scipy/optimize", "lstsq")),
    ("imports", ("importlib", "<frozen")),
)


def group_of(filename: str, function: str) -> str:
    """The group of one profiled function (first substring match in :data:`GROUPS`)."""
    key = f"{filename}:{function}"
    for group, needles in GROUPS:
        if any(needle in key for needle in needles):
            return group
    if filename.startswith("~") or filename == "":
        return "builtins / numpy C (caller's group not known)"
    return "other"


def command(name: str, jobs: int, cache: Path, out: Path) -> list[str]:
    """The ``aimc-pipeline`` arguments of one wait with its fresh cache and output folder."""
    args = [str(out) if a == "OUT" else a for a in WAITS[name][1]]
    return args + ["--jobs", str(jobs), "--cache-dir", str(cache)]


def reference_seconds() -> tuple[float, float]:
    """Minimum of 3 timings of the reference run after one warm-up (data and compile caches):
    wall-clock seconds and CPU seconds of this process (user + system), each the minimum."""
    run(REFERENCE, 0)
    best = cpu_best = float("inf")
    for _ in range(3):
        cpu, start = time.process_time(), time.perf_counter()
        run(REFERENCE, 0)
        best = min(best, time.perf_counter() - start)
        cpu_best = min(cpu_best, time.process_time() - cpu)
    return best, cpu_best


def _children_cpu() -> float:
    """CPU seconds (user + system) of every finished child process and its waited-for
    descendants (the pool workers of a wait)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_wait(name: str, jobs: int, checkout: Path = ROOT) -> dict:
    """Wall-clock seconds of one wait in a fresh process with a fresh cache, the package
    imported from ``checkout``."""
    with tempfile.TemporaryDirectory(prefix=f"waits-{name}-") as tmp:
        args = command(name, jobs, Path(tmp) / "cache", Path(tmp) / "out")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(checkout)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                               if p]))
        cpu, start = _children_cpu(), time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _CLI, *args], cwd=tmp, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        seconds = time.perf_counter() - start
        cpu_seconds = _children_cpu() - cpu
    tail = done.stderr.strip().splitlines()[-1:] if done.returncode not in (0, 1) else []
    return {"name": name, "command": "aimc-pipeline " + " ".join(WAITS[name][1]).replace(
        "OUT", "DIR") + f" --jobs {jobs} --cache-dir FRESH", "seconds": seconds,
        "cpu_seconds": cpu_seconds, "load_average": machine()["load_average"],
        "exit": done.returncode, "error": tail[0] if tail else None}


def profile(name: str, top: int = 25) -> None:
    """Run one wait in this process (jobs 1) under cProfile; print the top entries and groups."""
    from paper_figures.cli import main as cli_main

    with tempfile.TemporaryDirectory(prefix=f"waits-profile-{name}-") as tmp:
        args = command(name, 1, Path(tmp) / "cache", Path(tmp) / "out")
        profiler = cProfile.Profile()
        start = time.perf_counter()
        profiler.enable()
        try:
            with open(os.devnull, "w") as sink:
                stdout, sys.stdout = sys.stdout, sink
                try:
                    cli_main(args)
                finally:
                    sys.stdout = stdout
        except SystemExit:
            pass
        profiler.disable()
        wall = time.perf_counter() - start
    stats = pstats.Stats(profiler)
    entries = stats.stats  # (file, line, function) -> (cc, nc, tottime, cumtime, callers)
    total = sum(v[2] for v in entries.values())
    print(f"profile of {name} ({WAITS[name][0]}, jobs 1, one process): wall {wall:.1f} s, "
          f"profiled self time {total:.1f} s")
    print(f"top {top} by cumulative time:")
    print(f"  {'cum s':>8} {'self s':>8} {'calls':>9}  group | function")
    ranked = sorted(entries.items(), key=lambda item: -item[1][3])[:top]
    for (filename, line, function), (_, calls, tottime, cumtime, _) in ranked:
        where = filename.replace(str(ROOT) + os.sep, "")
        where = where if len(where) < 60 else "..." + where[-57:]
        print(f"  {cumtime:8.1f} {tottime:8.1f} {calls:9d}  {group_of(filename, function)} | "
              f"{where}:{line}({function})")
    groups: dict[str, float] = {}
    for (filename, _, function), value in entries.items():
        group = group_of(filename, function)
        if group.startswith("builtins"):  # a C function: charge it to its largest caller's group
            callers = value[4]
            if callers:
                caller = max(callers.items(), key=lambda item: item[1][2])[0]
                group = group_of(caller[0], caller[2])
        groups[group] = groups.get(group, 0.0) + value[2]
    print("self time by group (C functions charged to their largest caller's group):")
    for group, seconds in sorted(groups.items(), key=lambda item: -item[1]):
        print(f"  {seconds:8.1f} s {100 * seconds / total:5.1f} %  {group}")


def commit_of(checkout: Path) -> str | None:
    """The commit checked out at ``checkout`` (``None`` outside git)."""
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"],
                          capture_output=True, text=True)
    return done.stdout.strip() or None


def machine() -> dict:
    """The machine the numbers were measured on."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {"cpu_count": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "platform": platform.platform(),
            "load_average": list(load) if load else None}


def parse_only(text: str | None) -> list[str]:
    """The waits named by ``--only`` (all of them by default); exit 2 on an unknown name."""
    if not text:
        return list(WAITS)
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in WAITS]
    if unknown or not names:
        print(f"bench.waits: error: --only: unknown wait {', '.join(unknown) or text!r}; "
              f"valid: {', '.join(WAITS)}", file=sys.stderr)
        raise SystemExit(2)
    return names


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", metavar="NAME[,NAME]",
                        help=f"run only these waits (of {', '.join(WAITS)})")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default: 2)")
    parser.add_argument("--profile", metavar="NAME", choices=list(WAITS),
                        help="run this one wait under cProfile in this process (jobs 1) instead")
    parser.add_argument("--checkout", metavar="DIR", type=Path, default=ROOT,
                        help="time the commands of this checkout of the repository (default: "
                             "this one; the reference run is always this one's)")
    parser.add_argument("--record", metavar="FILE", help="also write the results as JSON to FILE")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        print("bench.waits: error: --jobs: must be >= 1", file=sys.stderr)
        return 2
    checkout = args.checkout.resolve()
    if not (checkout / "paper_figures" / "cli.py").is_file():
        print(f"bench.waits: error: --checkout: {checkout} holds no paper_figures/cli.py",
              file=sys.stderr)
        return 2
    if args.profile:
        profile(args.profile)
        return 0
    names = parse_only(args.only)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    load_start = machine()["load_average"]
    reference, reference_cpu = reference_seconds()
    print(f"checkout: {checkout} at {commit_of(checkout)}")
    print(f"reference: digits-mlp, 2,000 samples, analog, no pipeline: {reference:.3f} s, "
          f"{reference_cpu:.3f} CPU s (min of 3, this process; measured again before each wait)")
    results = []
    print(f"{'wait':<10} {'command':<26} {'seconds':>9} {'x ref':>7} {'CPU s':>8} "
          f"{'x ref CPU':>10} {'load':>5}  exit")
    for name in names:
        before, before_cpu = reference_seconds()
        result = time_wait(name, args.jobs, checkout)
        result.update(reference_seconds=before, reference_cpu_seconds=before_cpu,
                      ratio=result["seconds"] / before,
                      cpu_ratio=result["cpu_seconds"] / before_cpu)
        results.append(result)
        print(f"{name:<10} {WAITS[name][0]:<26} {result['seconds']:9.1f} {result['ratio']:7.0f} "
              f"{result['cpu_seconds']:8.1f} {result['cpu_ratio']:10.0f} "
              f"{result['load_average'][0] if result['load_average'] else float('nan'):5.1f}"
              f"  {result['exit']}" + (f"  ({result['error']})" if result["error"] else ""),
              flush=True)
    if args.record:
        record = {"date": started, "finished": datetime.now(UTC).isoformat(
            timespec="seconds"), "config": {"jobs": args.jobs, "waits": names,
                                            "reference": repr(REFERENCE),
                                            "checkout": str(checkout),
                                            "commit": commit_of(checkout)},
                  "machine": dict(machine(), load_average_start=load_start),
                  "reference_seconds": reference,
                  "reference_cpu_seconds": reference_cpu, "waits": results}
        Path(args.record).write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
