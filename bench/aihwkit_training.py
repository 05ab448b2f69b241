"""Per-sample analog training next to IBM aihwkit 1.1.0, paired by seed (issue 26 item 4).

Run from the repository root: ``python -m bench.aihwkit_training [--seeds R] [--settings NAME ...]
[--record] [--reference-only]``.

Two processes. This one (the project's Python) trains the digits MLP (16 layers of width 32,
tanh; ``NetworkSpec``'s default) per sample with the package: ``--write per-sample``, pulsed
``stochastic`` updates (aihwkit's ``StochasticCompressed`` bit trains), soft bounds ``tau = 1``,
``dw_min = 0.001``, ``desired_bl = 31``, no pulse noise, update and BL management off, exact IO,
4,800 samples, ``R`` ensemble members of root seed 0. It writes each member's initial weights and
batches (drawn by the package from the member's ``data`` stream) and the digits split to a
temporary ``.npz``; ``bench/aihwkit_side.py``, run by aihwkit's interpreter (``$AIHWKIT_PYTHON``,
default ``/work/aihw-venv/bin/python``), trains the same network from the same weights on the
same batches with ``AnalogSGD`` (one rank-1 pulse update per sample, in C++) and returns the test
accuracies. Both sides run on one thread.

It prints, per setting, each side's mean test accuracy with its standard error, and the paired
difference aimc - aihwkit (same seed: same initial weights, same batches; the pulse draws are each
side's own) with its standard error and the seeds where aimc is lower. ``--record`` writes both
sides' per-seed accuracies, the settings and the versions to :data:`REFERENCE`.

Without aihwkit (the interpreter missing or unable to import it) the script says so and compares
the package's side against the recorded aihwkit accuracies of :data:`REFERENCE` instead (same
seeds, so still paired), and reports whether the package's accuracies are still the recorded ones
(the same bits); ``--reference-only`` forces that. Nothing is asserted; it exits 0 in every case
but a failure of the aihwkit process.

``--step`` compares one update in isolation instead: member 0's first batch written ``--repeats``
times from the same initial weights on each side, the mean weight change of every layer against
the other side's and against the expected update of the soft-bounds response.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if __name__ == "__main__" and str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from simulate import NetworkSpec, SimConfig  # noqa: E402
from simulate.problems.digits import sample_indices  # noqa: E402
from simulate.problems.network_run import NetworkTraining  # noqa: E402
from simulate.problems.sizes import DRAW_CHUNK  # noqa: E402
from simulate.rng import member_generators  # noqa: E402
from simulate.verification import standard_error  # noqa: E402
from theory import atomic_write, text_table  # noqa: E402

#: the recorded aihwkit (and package) accuracies, for a check without aihwkit
REFERENCE = ROOT / "bench" / "reference" / "aihwkit_per_sample.json"
#: the aihwkit side, run by aihwkit's interpreter
SIDE = ROOT / "bench" / "aihwkit_side.py"
DEFAULT_PYTHON = "/work/aihw-venv/bin/python"
SAMPLES = 4800
ROOT_SEED = 0
SPEC = NetworkSpec(grad_norm=False)


@dataclass(frozen=True)
class Setting:
    """One training setting of the comparison: micro-batch ``batch`` and step ``lr`` (the rest
    is the module docstring's)."""

    batch: int
    lr: float

    @property
    def steps(self) -> int:
        """Updates of :data:`SAMPLES` samples."""
        return SAMPLES // self.batch

    def config(self, seeds: int) -> SimConfig:
        """The package's configuration of this setting with ``seeds`` members."""
        return SimConfig(problem="digits-mlp", device="softbounds", tau=1.0, lr=self.lr,
                         micro_batch_size=self.batch, steps=self.steps, log_every=self.steps,
                         update="pulsed", pulse_type="stochastic", write="per-sample",
                         seeds=seeds, seed=ROOT_SEED)


#: the settings: the one of the earlier 8-seed comparison, and half the micro-batch (each
#: sample's write then carries twice the share of the step, and there are twice the updates)
SETTINGS = {"b8-lr0.05": Setting(8, 0.05), "b4-lr0.05": Setting(4, 0.05)}


@dataclass(frozen=True, eq=False)
class AimcRuns:
    """The package's side of one setting: per layer the initial weights ``(R, fan_in, fan_out)``,
    the batches ``(K, R, b)``, the test accuracy ``(R,)``."""

    shapes: tuple
    w0: tuple
    batches: np.ndarray
    accuracy: np.ndarray


def draws_of(config, training: NetworkTraining):
    """Each member's initial weights and batches as the package draws them (its ``data``
    stream: the weights, then the batches in chunks of ``DRAW_CHUNK`` updates), checked against
    the weights ``training`` starts from."""
    network, data = training.network, training.data
    rngs = member_generators(training.seed, training.members)["data"]
    w, _ = network.init(rngs, SPEC.init_fraction * -1.0, SPEC.init_fraction * 1.0)
    if not np.array_equal(w, training.w):
        raise RuntimeError("the reproduced initial weights differ from the run's")
    chunks = [sample_indices(rngs, data.n_train, config.samples_per_update,
                             batches=min(DRAW_CHUNK, config.steps - k))
              for k in range(0, config.steps, DRAW_CHUNK)]
    layers = network.layers
    w0, start = [], 0
    for layer in layers:
        w0.append(w[:, start:start + layer.w_size].reshape(-1, layer.fan_in, layer.fan_out))
        start += layer.w_size
    shapes = tuple((layer.fan_in, layer.fan_out) for layer in layers)
    return shapes, tuple(w0), np.concatenate(chunks, axis=0)


def aimc_runs(setting: Setting, seeds: int) -> AimcRuns:
    """Train the package's side of ``setting`` (``seeds`` members, one ensemble)."""
    config = setting.config(seeds)
    training = NetworkTraining(config, spec=SPEC)
    shapes, w0, batches = draws_of(config, training)
    run = training.run()
    return AimcRuns(shapes, w0, batches, run.trace.test_accuracy[:, -1].copy())


def export_runs(runs: AimcRuns) -> dict:
    """The arrays of ``bench/aihwkit_side.py``'s input for ``runs`` (its docstring lists them)."""
    from simulate import load_digits_split

    data = load_digits_split()
    return {"x_train": data.x_train, "y_train": data.y_train, "x_test": data.x_test,
            "y_test": data.y_test, "shapes": np.array(runs.shapes), "batches": runs.batches,
            **{f"w0_{i}": w for i, w in enumerate(runs.w0)}}


def aihwkit_python() -> str | None:
    """aihwkit's interpreter (``$AIHWKIT_PYTHON`` or :data:`DEFAULT_PYTHON`), or ``None`` (with
    the reason printed) when it is missing or cannot import aihwkit."""
    python = os.environ.get("AIHWKIT_PYTHON", DEFAULT_PYTHON)
    if not Path(python).exists():
        print(f"aihwkit not available: {python} does not exist (set AIHWKIT_PYTHON)")
        return None
    probe = subprocess.run([python, "-c", "import aihwkit, torch; print(aihwkit.__version__)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        print(f"aihwkit not available: {python} cannot import it ({last})")
        return None
    return python


def run_side(python: str, arrays: dict, settings: dict) -> dict:
    """Run ``bench/aihwkit_side.py`` on ``arrays`` and ``settings`` (one thread); its output
    arrays."""
    with tempfile.TemporaryDirectory(prefix="aihwkit-bench-") as tmp:
        path_in, path_out = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
        np.savez(path_in, settings=json.dumps(settings), **arrays)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "OPENBLAS_NUM_THREADS": "1"}
        subprocess.run([python, str(SIDE), str(path_in), str(path_out)], check=True, env=env)
        with np.load(path_out, allow_pickle=False) as out:
            return {name: out[name] for name in out.files}


def run_aihwkit(python: str, runs: AimcRuns, settings: dict) -> dict:
    """Run the aihwkit side on the package's draws; its output arrays."""
    return run_side(python, export_runs(runs), settings)


def side_settings(setting: Setting, mode: str, repeats: int = 0) -> dict:
    """The settings the aihwkit side reads."""
    return {"lr": setting.lr, "tau": 1.0, "dw_min": 0.001, "desired_bl": 31, "mode": mode,
            "repeats": repeats}


@dataclass(frozen=True)
class Paired:
    """The paired comparison of one setting: means and standard errors of both sides, the
    paired difference ``aimc - aihwkit`` and the seeds where aimc is lower."""

    seeds: int
    aimc: float
    aimc_se: float
    aihwkit: float
    aihwkit_se: float
    diff: float
    diff_se: float
    lower: int

    @classmethod
    def of(cls, aimc, aihwkit) -> Paired:
        aimc, aihwkit = np.asarray(aimc, dtype=float), np.asarray(aihwkit, dtype=float)
        diff = aimc - aihwkit
        return cls(int(aimc.size), float(aimc.mean()), standard_error(aimc),
                   float(aihwkit.mean()), standard_error(aihwkit), float(diff.mean()),
                   standard_error(diff), int((diff < 0).sum()))

    def row(self, name: str) -> list[str]:
        z = self.diff / self.diff_se if self.diff_se > 0 else float("nan")
        return [name, str(self.seeds), f"{self.aimc:.3f} +- {self.aimc_se:.3f}",
                f"{self.aihwkit:.3f} +- {self.aihwkit_se:.3f}",
                f"{self.diff:+.4f} +- {self.diff_se:.4f}", f"{z:+.2f}",
                f"{self.lower}/{self.seeds}"]


HEADER = ["setting", "seeds", "aimc", "aihwkit", "aimc - aihwkit", "z", "aimc lower"]


def load_reference() -> dict | None:
    """The recorded reference, or ``None``."""
    if not REFERENCE.exists():
        return None
    return json.loads(REFERENCE.read_text())


def record(results: dict, versions: dict, seeds: int) -> None:
    """Write :data:`REFERENCE`."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    payload = {
        "what": "test accuracy of the digits MLP trained per sample, the package next to aihwkit "
                "(bench/aihwkit_training.py)",
        "date": datetime.date.today().isoformat(), "commit": commit, "versions": versions,
        "protocol": {"network": "digits-mlp, 16 layers of width 32, tanh", "samples": SAMPLES,
                     "device": "soft bounds tau 1, dw_min 0.001, no noise, no spread",
                     "pulses": "stochastic (StochasticCompressed), desired_bl 31, update and "
                               "BL management off", "io": "exact", "root_seed": ROOT_SEED,
                     "members": seeds,
                     "aihwkit_pulses": "unseeded (aihwkit's C++ generators start from the clock)"},
        "settings": {name: {"batch": SETTINGS[name].batch, "lr": SETTINGS[name].lr,
                            "steps": SETTINGS[name].steps, "aimc": result["aimc"].tolist(),
                            "aihwkit": result["aihwkit"].tolist()}
                     for name, result in results.items()},
    }
    REFERENCE.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(REFERENCE, (json.dumps(payload, indent=1) + "\n").encode())
    print(f"recorded {REFERENCE.relative_to(ROOT)}")


def compare_training(names, seeds: int, python: str | None, write: bool) -> int:
    """The paired table of the training comparison (module docstring)."""
    reference = load_reference() if python is None else None
    if python is None:
        if reference is None:
            print(f"no recorded reference ({REFERENCE.relative_to(ROOT)}): nothing to compare")
            return 0
        print(f"comparing against the aihwkit accuracies recorded on {reference['date']} "
              f"({reference['versions'].get('aihwkit', '?')}, commit {reference['commit']})")
    rows, results, versions = [], {}, {}
    for name in names:
        setting = SETTINGS[name]
        if python is None:
            recorded = reference["settings"].get(name)
            if recorded is None:
                print(f"{name}: not in the reference")
                continue
            seeds_here = len(recorded["aihwkit"])
            runs = aimc_runs(setting, seeds_here)
            same = np.array_equal(runs.accuracy, np.array(recorded["aimc"]))
            print(f"{name}: the package's accuracies are "
                  f"{'the recorded ones (same bits)' if same else 'NOT the recorded ones'}")
            aihw = np.array(recorded["aihwkit"])
        else:
            runs = aimc_runs(setting, seeds)
            out = run_aihwkit(python, runs, side_settings(setting, "train"))
            aihw, versions = out["accuracy"], json.loads(str(out["versions"]))
        results[name] = {"aimc": runs.accuracy, "aihwkit": aihw}
        paired = Paired.of(runs.accuracy, aihw)
        rows.append(paired.row(name))
        print(text_table(HEADER, rows[-1:]), flush=True)
    print()
    print(text_table(HEADER, rows))
    if write and python is not None:
        record(results, versions, seeds)
    return 0


def compare_step(name: str, repeats: int, python: str) -> int:
    """One update in isolation (module docstring, ``--step``)."""
    from simulate.problems.network_run import NetworkTraining as Training

    setting = SETTINGS[name]
    config = setting.config(repeats)
    training = Training(config, spec=SPEC)
    shapes, w0, batches = draws_of(config, training)
    # every member: member 0's weights and first batch (their pulses: each member's own stream)
    first = np.broadcast_to(batches[0, :1], (DRAW_CHUNK, repeats, setting.batch)).copy()
    start = training.w[0].copy()
    training.w[:] = start
    training._chunk = first  # noqa: SLF001 (a diagnostic: step 1 reads chunk row 1)
    training.step(1)
    dw_aimc = training.w - start
    runs = AimcRuns(shapes, tuple(w[:1] for w in w0), batches[:1, :1], np.zeros(1))
    out = run_aihwkit(python, runs, side_settings(setting, "step", repeats))
    header = ["layer", "|mean dw| aimc", "aihwkit", "mean z^2", "max |z|", "var ratio"]
    rows, offset, z2_all = [], 0, []
    for i, (fan_in, fan_out) in enumerate(shapes):
        size = fan_in * fan_out
        block = dw_aimc[:, offset:offset + size].reshape(repeats, fan_in, fan_out)
        offset += size
        mean_a, var_a = block.mean(0), block.var(0, ddof=1)
        mean_k = out[f"dw_mean_{i}"]
        var_k = np.maximum(out[f"dw_sq_{i}"] - mean_k**2, 0.0) * repeats / (repeats - 1)
        se = np.sqrt((var_a + var_k) / repeats)
        moving = se > 0
        z = (mean_a - mean_k)[moving] / se[moving]
        z2_all.append(z**2)
        rows.append([str(i), f"{np.abs(mean_a).mean():.3e}", f"{np.abs(mean_k).mean():.3e}",
                     f"{np.mean(z**2):.3f}", f"{np.abs(z).max():.2f}",
                     f"{var_a[moving].sum() / var_k[moving].sum():.3f}"])
    z2 = np.concatenate(z2_all)
    rows.append(["all", "", "", f"{z2.mean():.3f} +- {z2.std(ddof=1) / np.sqrt(z2.size):.3f}",
                 f"{np.sqrt(z2.max()):.2f}", ""])
    print(f"one update ({name}), member 0's first batch, {repeats} repeats per side: mean z^2 "
          "is 1 where the two sides' mean weight changes agree")
    print(text_table(header, rows))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=32, help="paired seeds (ensemble members)")
    parser.add_argument("--settings", nargs="+", choices=sorted(SETTINGS),
                        default=list(SETTINGS), help="settings to run")
    parser.add_argument("--record", action="store_true", help=f"write {REFERENCE.name}")
    parser.add_argument("--reference-only", action="store_true",
                        help="compare against the recorded reference even where aihwkit runs")
    parser.add_argument("--step", action="store_true", help="one update in isolation")
    parser.add_argument("--repeats", type=int, default=200, help="repeats of --step")
    args = parser.parse_args(argv)
    python = None if args.reference_only else aihwkit_python()
    if args.step:
        if python is None:
            print("--step needs aihwkit; skipped")
            return 0
        return compare_step(args.settings[0], args.repeats, python)
    return compare_training(args.settings, args.seeds, python, args.record)


if __name__ == "__main__":
    raise SystemExit(main())
