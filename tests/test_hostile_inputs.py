"""Bad input, as a hostile but fair user gives it: every case fails cleanly, fast and small.

A case table (one row per input, at least one per class of the robustness issue and per flag
family). Each command-line row asserts the exit code, a single stderr line that names the parameter
as the user typed it, and no traceback. Rows that could hang or allocate run in a child process
that reports its own peak resident memory (``VmHWM``) under a capped address
space: the command must refuse *before* allocating. Hangs are caught by a generous timeout (a hang
detector, not a timing assertion).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from paper_figures.cli import main

ROOT = Path(__file__).resolve().parents[1]
#: peak RSS a refused command may reach (the package's imports alone take ~150 MB)
MAX_RSS_MB = 400
#: a command that has not answered by then is hanging
HANG_S = 60


@dataclass(frozen=True)
class Case:
    """One bad input: ``argv`` of ``aimc-pipeline``; ``names`` must all appear in the message."""

    id: str
    argv: tuple[str, ...]
    names: tuple[str, ...]
    status: int = 2
    subprocess: bool = False  # run in a child process: memory measured, hangs caught
    files: dict = field(default_factory=dict)  # file name -> content, created in tmp_path
    #: must all appear on stdout (an input now answered: exit 0)
    stdout: tuple[str, ...] = ()
    #: stderr lines starting with one of these are the command's progress notes, not the message
    #: (``calibrate: N design points ...`` of a row whose refusal comes after the design)
    progress: tuple[str, ...] = ()


BIG = "1" + "0" * 400
DEEP = "x = " + "[" * 2000 + "]" * 2000 + "\n"

CASES = [
    # 1. tracebacks
    Case("bounds-huge-int-stages", ("bounds", "--stages", BIG), ("--stages", "401 digits")),
    Case("bounds-toml-huge-int", ("bounds", "--config", "{tmp}/c.toml"), ("stages",),
         files={"c.toml": f'preset = "softbounds-tau1"\n[pipeline]\nstages = {BIG}\n'}),
    # a huge eps is reachable in one iteration: computed (K(eps) in a scaled form), not refused
    Case("bounds-eps-1e300", ("bounds", "--eps", "1e300"), (), status=0,
         stdout=("eps = 1e+300", "analog_sgd_ap")),
    Case("plan-eps-1e300", ("plan", "--eps", "1e300", "--model", "digits-mlp", "--no-relax"),
         (), status=0, stdout=("at eps = 1e+300", "iterations           1 ")),
    Case("plan-eps-negative-no-model", ("plan", "--eps", "-1"), ("--eps", "range")),
    Case("bounds-toml-preset-list", ("bounds", "--config", "{tmp}/c.toml"), ("preset",),
         files={"c.toml": 'preset = ["softbounds-tau1"]\n'}),
    Case("bounds-toml-read-time-huge", ("bounds", "--config", "{tmp}/c.toml"), ("read_time_s",),
         files={"c.toml": 'preset = "softbounds-tau1"\n[timing]\nread_time_s = 1e300\n'}),
    Case("model-deep-nesting", ("plan", "--model", "{tmp}/m.toml"), ("--model",),
         files={"m.toml": DEEP}),
    Case("plan-huge-max-micro-batch-size", ("plan", "--max-micro-batch-size", "100000000"),
         ("--max-micro-batch-size",), subprocess=True),
    Case("device-family-list", ("bounds", "--config", "{tmp}/c.toml"), ("family",),
         files={"c.toml": '[device]\nfamily = ["softbounds"]\n'}),
    Case("toml-deep-nesting", ("bounds", "--config", "{tmp}/c.toml"), ("--config",),
         files={"c.toml": DEEP}),
    Case("model-rows-huge", ("plan", "--model", "{tmp}/m.toml"), ("rows",),
         files={"m.toml": 'name = "m"\n[[blocks]]\nlayers = [{ name = "d", rows = '
                          '1000000000000000000000000000000, cols = 4 }]\n'}),
    Case("simulate-out-exists", ("simulate", "--steps", "5", "--out", "{tmp}/f"), ("--out",),
         files={"f": "x"}),
    Case("simulate-out-proc", ("simulate", "--steps", "5", "--out", "/proc/version"),
         ("--out", "writable directory")),
    Case("simulate-out-under-file", ("simulate", "--steps", "5", "--out", "{tmp}/f/sub"),
         ("--out", "not a directory"), files={"f": "x"}),
    Case("verify-out-exists", ("verify", "--suite", "quick", "--out", "{tmp}/f"), ("--out",),
         files={"f": "x"}),
    Case("verify-scheduler-unreachable",
         ("verify", "--suite", "quick", "--scheduler", "tcp://127.0.0.1:1", "--no-cache"),
         ("--scheduler", "tcp://127.0.0.1:1"), subprocess=True),
    Case("verify-scheduler-bad-port", ("verify", "--scheduler", "tcp://127.0.0.1:99999"),
         ("--scheduler", "99999", "65535")),
    Case("verify-scheduler-unknown-scheme", ("verify", "--scheduler", "http://127.0.0.1:8786"),
         ("--scheduler", "http://127.0.0.1:8786")),
    Case("verify-out-proc-file", ("verify", "--suite", "quick", "--out", "/proc/version"),
         ("--out", "/proc/version")),
    Case("verify-out-not-writable", ("verify", "--no-cache", "--out", "/proc/sys"),
         ("--out", "/proc/sys")),
    Case("verify-out-under-a-file", ("verify", "--out", "{tmp}/f/sub"), ("--out",),
         files={"f": "x"}),
    Case("figures-out-not-writable", ("figures", "--no-cache", "--out", "/proc/sys"),
         ("--out", "/proc/sys")),
    Case("report-out-is-a-file", ("report", "--quick", "--no-cache", "--out", "{tmp}/f"),
         ("--out",), files={"f": "x"}),
    # 2. hangs and memory
    # a schedule too large to simulate event by event is summarised from the closed forms (exit 0,
    # one stderr note that the Gantt chart is left out, bounded memory)
    Case("schedule-huge-grid", ("schedule", "--stages", "100000", "--micro-batches", "100000",
                                "--mode", "sync"), ("--stages", "closed forms"), status=0,
         subprocess=True, stdout=("total cycles", "399998")),
    Case("schedule-async-huge-samples", ("schedule", "--stages", "4", "--micro-batches", "1",
                                         "--mode", "async", "--samples", "1000000000"),
         ("--samples", "closed forms"), status=0, subprocess=True,
         stdout=("total cycles", "2000000006")),
    Case("schedule-huge-json", ("schedule", "--stages", "4", "--micro-batches", "1000000",
                                "--mode", "sync", "--json"), ("--micro-batches", "closed forms"),
         status=0, subprocess=True, stdout=('"grid": null', '"cycles": 2000006')),
    Case("simulate-huge-steps", ("simulate", "--steps", "1000000000000"), ("--steps",),
         subprocess=True),
    Case("simulate-huge-seeds", ("simulate", "--seeds", "1000000000"), ("--seeds",),
         subprocess=True),
    Case("simulate-huge-dim", ("simulate", "--dim", "1000000000"), ("--dim",), subprocess=True),
    Case("simulate-digits-huge-batch", ("simulate", "--problem", "digits-mlp",
                                        "--micro-batch-size", "100000000"),
         ("--micro-batch-size",), subprocess=True),
    Case("plan-huge-max-micro-batches", ("plan", "--max-micro-batches", "1000000000"),
         ("--max-micro-batches",), subprocess=True),
    Case("model-huge-repeat", ("plan", "--model", "{tmp}/m.toml"), ("repeat",),
         subprocess=True,
         files={"m.toml": 'name = "m"\n[[blocks]]\nrepeat = 100000000\n'
                          'layers = [{ name = "d", rows = 4, cols = 4 }]\n'}),
    Case("simulate-pulsed-huge-lr", ("simulate", "--update", "pulsed", "--pulse-type",
                                     "deterministic", "--lr", "1e4"),
         ("--lr",), subprocess=True),
    Case("simulate-pulse-response-huge-tile", ("pulse-response", "--devices", "1000000000",
                                               "--bl", "100000"), ("--devices", "bytes"),
         subprocess=True),
    Case("simulate-pulse-response-huge-work", ("pulse-response", "--devices", "100000",
                                               "--bl", "1000", "--w0", *("0",) * 200),
         ("--devices", "device-bits"), subprocess=True),
    Case("simulate-pulse-response-huge-bl", ("pulse-response", "--bl", "1000000000"),
         ("--bl", "range"), subprocess=True),
    Case("simulate-pulse-response-deterministic-huge-delta",
         ("pulse-response", "--pulse-type", "deterministic", "--delta", "1e300"),
         ("--delta", "pulses"), subprocess=True),
    Case("report-eps-tiny", ("report", "--eps", "1e-300", "--quick", "--out", "{tmp}/r"),
         ("--eps",), subprocess=True),
    # 3. wrong numbers
    Case("simulate-cycles-overflow", ("simulate", "--steps", "5", "--micro-batches",
                                      "1000000000000000000", "--json"), ("--micro-batches",)),
    Case("simulate-preset-ignores-tau", ("simulate", "--device", "reram-softbounds", "--tau",
                                         "5"), ("--tau", "reram-softbounds")),
    Case("simulate-preset-typed-default-tau", ("simulate", "--device", "ecram-linearstep",
                                               "--tau", "1"), ("--tau", "ecram-linearstep")),
    Case("simulate-samples-overflow", ("simulate", "--steps", "10", "--micro-batch-size",
                                       "1000000000000000000"), ("--micro-batch-size", "samples")),
    Case("simulate-async-huge-batch", ("simulate", "--problem", "digits-resmlp", "--mode",
                                       "async", "--micro-batch-size", "10000000"),
         ("--micro-batch-size", "bytes"), subprocess=True),
    Case("simulate-huge-log-trace", ("simulate", "--steps", "1000000000", "--log-every", "1"),
         ("--log-every",), subprocess=True),
    # 4. accepted without a signal
    Case("digits-diverges", ("simulate", "--problem", "digits-mlp", "--lr", "1e4", "--steps",
                             "40"), ("lr",)),
    Case("analog-pinned-warns", ("simulate", "--lr", "1e6", "--steps", "50"),
         ("warning", "lr=1e+06", "pinned"), status=0),
    # 5. unclear messages
    Case("config-missing-file", ("bounds", "--config", "{tmp}/missing.toml"), ("--config",)),
    Case("model-missing-file", ("plan", "--model", "{tmp}/missing.toml"), ("--model",)),
    Case("cache-dir-is-a-file", ("verify", "--suite", "quick", "--cache-dir", "{tmp}/f"),
         ("--cache-dir",), files={"f": "x"}),
    Case("cache-dir-under-a-file", ("verify", "--cache-dir", "{tmp}/f/sub"), ("--cache-dir",),
         files={"f": "x"}),
    Case("cache-dir-not-writable", ("verify", "--cache-dir", "/proc/sys/aimc"),
         ("--cache-dir", "/proc/sys/aimc")),
    Case("simulate-tau-tiny", ("simulate", "--tau", "1e-6"), ("--tau",)),
    Case("bounds-eps-tiny-no-warnings", ("bounds", "--eps", "1e-300"), ("--eps",)),
    Case("bounds-sigma2-huge", ("bounds", "--sigma2", "1e308", "--eps", "1e-3"), ("eps",)),
    Case("bounds-L-huge", ("bounds", "--L", "1e308"), ("--L=1e+308", "float range")),
    Case("argparse-type-error", ("simulate", "--seeds", "1e9"), ("--seeds", "integer")),
    Case("many-unknown-keys", ("bounds", "--config", "{tmp}/c.toml"), ("unknown",),
         files={"c.toml": "".join(f"k{i} = 1\n" for i in range(20000))}),
]


# issue 25, items 4-6: the second round (calibrate, plan --hardware / --compare-modes, limits)
#: 16 analog kinds of one accelerator each: 2^16 kind subsets
KINDS16 = "".join(f'[[kinds]]\nname = "a{i}"\ntype = "analog"\ncount = 1\ntiles = 16384\n\n'
                  for i in range(16))


def _kind(**keys) -> str:
    """One ``[[kinds]]`` table of an analog kind with ``keys`` over the defaults."""
    fields = {"name": '"aimc"', "type": '"analog"', "count": "4", "tiles": "16384"} | keys
    return "[[kinds]]\n" + "".join(f"{k} = {v}\n" for k, v in fields.items())


PLAN = ("plan", "--model", "digits-mlp")
HW = (*PLAN, "--hardware", "{tmp}/h.toml")
#: a calibration too small to fit but quick to run (two seeds, ten updates, one process)
CAL_TINY = ("calibrate", "--quick", "--steps", "10", "--seeds", "2", "--jobs", "1", "--no-cache")
CAL_PROGRESS = ("calibrate: ",)

CASES += [
    # 4. unbounded work: refused before any work, the limit in the message
    Case("calibrate-resamples-huge", ("calibrate", "--quick", "--resamples", "1000000000"),
         ("--resamples=1000000000", "bootstrap", "limit 1e+04"), subprocess=True),
    Case("calibrate-resamples-negative", ("calibrate", "--quick", "--resamples", "-1"),
         ("--resamples=-1",)),
    Case("plan-hardware-16-kinds", HW, ("--hardware=", "h.toml': kinds=16", "limit 3e+04"),
         subprocess=True, files={"h.toml": KINDS16}),
    Case("plan-hardware-16-kinds-in-process", HW, ("--hardware=", "candidate layouts"),
         files={"h.toml": KINDS16}),
    Case("plan-hardware-huge-count", HW, ("--hardware=", "h.toml", "at least", "limit 3e+04"),
         files={"h.toml": _kind(count="1000000000")}),
    Case("plan-digital-accelerators-1e18",
         (*PLAN, "--digital-accelerators", "1000000000000000000"),
         ("--digital-accelerators=1000000000000000000", "limit 3e+04"), subprocess=True),
    Case("plan-digital-accelerators-1e6", (*PLAN, "--digital-accelerators", "1000000"),
         ("--digital-accelerators=1000000", "candidate layouts")),
    Case("plan-compare-modes-1e6-accelerators",
         (*PLAN, "--accelerators", "1000000", "--compare-modes"),
         ("--accelerators=1000000", "candidate layouts", "limit 3e+04"), subprocess=True),
    Case("plan-compare-modes-1e4-accelerators",
         (*PLAN, "--accelerators", "10000", "--compare-modes"),
         ("--accelerators=10000", "candidate layouts")),
    Case("simulate-per-sample-pulsed-huge-batch",
         ("simulate", "--update", "pulsed", "--write", "per-sample", "--micro-batch-size",
          "100000"), ("--micro-batch-size=100000", "sequential pulsed writes", "limit 1e+07"),
         subprocess=True),
    Case("simulate-per-sample-pulsed-huge-steps",
         ("simulate", "--update", "pulsed", "--write", "per-sample", "--steps", "100000000"),
         ("--steps=100000000", "sequential pulsed writes")),
    Case("simulate-tiki-taka-transfer-every-401-digits",
         ("simulate", "--algorithm", "tiki-taka", "--transfer-every", BIG),
         ("--transfer-every", "401 digits", "1e+09")),
    Case("simulate-tiki-taka-transfer-every-1e12",
         ("simulate", "--algorithm", "tiki-taka", "--transfer-every", "1000000000000"),
         ("--transfer-every=1000000000000", "1e+09")),
    Case("simulate-tiki-taka-transfer-every-0",
         ("simulate", "--algorithm", "tiki-taka", "--transfer-every", "0"),
         ("--transfer-every=0",)),
    Case("calibrate-tiki-taka-transfer-every-huge",
         ("calibrate", "--quick", "--algorithm", "tiki-taka", "--transfer-every", BIG),
         ("--transfer-every", "401 digits")),
    Case("calibrate-tiki-taka-transfer-every-0",
         ("calibrate", "--quick", "--algorithm", "tiki-taka", "--transfer-every", "0"),
         ("--transfer-every=0",)),
    Case("plan-tiki-taka-transfer-every-huge",
         (*PLAN, "--algorithm", "tiki-taka", "--transfer-every", BIG),
         ("--transfer-every", "401 digits")),
    Case("calibrate-steps-1e9", ("calibrate", "--quick", "--steps", "1000000000"),
         ("--steps=1000000000", "trace")),
    Case("calibrate-steps-too-few", ("calibrate", "--quick", "--steps", "5"), ("--steps=5",)),
    Case("calibrate-seeds-huge", ("calibrate", "--quick", "--seeds", "100000000"),
         ("--seeds=100000000", "bytes")),
    Case("calibrate-seeds-one", ("calibrate", "--quick", "--seeds", "1"), ("--seeds=1",)),
    Case("verify-jobs-401-digits", ("verify", "--suite", "quick", "--jobs", BIG,
                                    "--cache-dir", "{tmp}/c"), ("--jobs", "401 digits", "1024")),
    Case("verify-jobs-2000", ("verify", "--suite", "quick", "--jobs", "2000"),
         ("--jobs=2000", "1024")),
    Case("verify-jobs-0", ("verify", "--suite", "quick", "--jobs", "0"), ("--jobs=0",)),
    Case("calibrate-jobs-401-digits", ("calibrate", "--quick", "--jobs", BIG,
                                       "--cache-dir", "{tmp}/c"), ("--jobs", "401 digits")),
    Case("figures-jobs-401-digits", ("figures", "--quick", "--jobs", BIG, "--out", "{tmp}/f"),
         ("--jobs", "401 digits")),
    # 5. every range check before any work; messages naming what the user typed
    Case("calibrate-sigma2-zero", ("calibrate", "--quick", "--sigma2", "0"),
         ("--sigma2=0", "(0, inf)")),
    Case("calibrate-sigma2-negative", ("calibrate", "--quick", "--sigma2", "-1"),
         ("--sigma2=-1",)),
    Case("calibrate-sigma2-nan", ("calibrate", "--quick", "--sigma2", "nan"),
         ("--sigma2=nan", "finite")),
    # every run pinned at the device bounds: one line, the fit's error and the pinning (no
    # PinnedWarning of the runs, whichever process ran them)
    Case("calibrate-sigma2-1e300", (*CAL_TINY, "--sigma2", "1e300"),
         ("design", "pinned at the device bounds"), progress=CAL_PROGRESS),
    # the same with two worker processes, in a child whose whole stderr (the workers') is read
    Case("calibrate-sigma2-1e300-workers", (*CAL_TINY, "--jobs", "2", "--sigma2", "1e300"),
         ("design", "10 of 10 design points ran pinned"), progress=CAL_PROGRESS, subprocess=True),
    Case("calibrate-dim-one", ("calibrate", "--quick", "--dim", "1"),
         ("--dim=1", "8 stages")),
    Case("calibrate-dim-below-standard-design", ("calibrate", "--dim", "8"),
         ("--dim=8", "16 stages")),
    Case("calibrate-dim-zero", ("calibrate", "--quick", "--dim", "0"), ("--dim=0",)),
    Case("calibrate-weight-bound-outside-device", ("calibrate", "--quick", "--weight-bound", "5"),
         ("--weight-bound=5", "device")),
    Case("calibrate-weight-bound-preset", ("calibrate", "--quick", "--device", "reram-softbounds",
                                           "--weight-bound", "0.9"), ("--weight-bound=0.9",)),
    Case("calibrate-weight-bound-zero", ("calibrate", "--quick", "--weight-bound", "0"),
         ("--weight-bound",)),
    Case("calibrate-theta-one", ("calibrate", "--quick", "--theta", "1"), ("--theta",)),
    Case("calibrate-tau-tiny", ("calibrate", "--quick", "--tau", "1e-300"), ("--tau=1e-300",)),
    Case("calibrate-device-unknown", ("calibrate", "--quick", "--device", "nosuch"),
         ("--device='nosuch'",)),
    Case("calibrate-seed-negative", ("calibrate", "--quick", "--seed", "-1"), ("--seed=-1",)),
    Case("calibrate-out-under-a-file", ("calibrate", "--quick", "--out", "{tmp}/f/c.json"),
         ("--out=", "not an existing directory"), files={"f": "x"}),
    # a deprecated file name in a missing folder: refused up front, the folder not created
    # (as root, /nonexistent_dir would be); the issue's /nonexistent_dir/c.json, under tmp
    Case("calibrate-out-missing-folder", ("calibrate", "--quick", "--out",
                                          "{tmp}/nonexistent_dir/c.json"),
         ("--out=", "nonexistent_dir", "not an existing directory")),
    Case("calibrate-out-missing-folder-under-proc",
         ("calibrate", "--quick", "--out", "/proc/nonexistent_dir/c.json"),
         ("--out=", "/proc/nonexistent_dir")),
    Case("calibrate-out-dir-under-proc", ("calibrate", "--quick", "--out", "/proc/sys/aimc"),
         ("--out=", "/proc/sys")),
    Case("calibrate-out-dir-is-a-file", ("calibrate", "--quick", "--out", "{tmp}/f"),
         ("--out=",), files={"f": "x"}),
    Case("calibrate-cache-dir-is-a-file", ("calibrate", "--quick", "--cache-dir", "{tmp}/f"),
         ("--cache-dir=",), files={"f": "x"}),
    Case("hardware-weight-bound-named-in-file", HW, ("h.toml", "kinds[0].weight_bound = 5"),
         files={"h.toml": _kind(weight_bound="5")}),
    Case("hardware-count-401-digits", HW, ("h.toml", "kinds[0].count"),
         files={"h.toml": _kind(count="100000000000000000000")}),
    Case("hardware-count-zero", HW, ("h.toml", "kinds[0].count = 0"),
         files={"h.toml": _kind(count="0")}),
    Case("hardware-second-kind-count", HW, ("h.toml", "kinds[1].count = -1"),
         files={"h.toml": _kind() + _kind(name='"b"', count="-1")}),
    Case("hardware-tiles-zero", HW, ("h.toml", "kinds[0].tiles"),
         files={"h.toml": _kind(tiles="0")}),
    Case("hardware-unknown-type", HW, ("h.toml", "kinds[0].type"),
         files={"h.toml": _kind(type='"quantum"')}),
    Case("hardware-unknown-key", HW, ("h.toml", "colour"),
         files={"h.toml": _kind(colour="1")}),
    Case("hardware-no-kinds", HW, ("h.toml", "kinds"),
         files={"h.toml": "link_bytes_per_s = 64e9\n"}),
    Case("hardware-dev-zero", (*PLAN, "--hardware", "/dev/zero"), ("--hardware", "16 MiB")),
    Case("hardware-with-digital-accelerators",
         (*HW, "--digital-accelerators", "2"), ("digital-accelerators=2", "--hardware"),
         files={"h.toml": _kind()}),
    Case("plan-digital-accelerators-401-digits", (*PLAN, "--digital-accelerators", BIG),
         ("--digital-accelerators", "401 digits")),
    Case("plan-digital-accelerators-zero", (*PLAN, "--digital-accelerators", "0"),
         ("--digital-accelerators=0",)),
    Case("plan-accelerators-zero", (*PLAN, "--accelerators", "0"), ("--accelerators=0",)),
    Case("plan-mode-micro-batch-size-zero",
         (*PLAN, "--compare-modes", "--mode-micro-batch-sizes", "0"),
         ("--mode-micro-batch-sizes=0",)),
    # 6. silently ignored: now refused, as simulate's applicability rules refuse them
    Case("calibrate-transfer-every-analog", ("calibrate", "--quick", "--transfer-every", "0"),
         ("--transfer-every=0", "tiki-taka")),
    Case("calibrate-transfer-slice-analog", ("calibrate", "--quick", "--transfer-slice", "all"),
         ("--transfer-slice=all", "tiki-taka")),
    Case("simulate-transfer-every-analog", ("simulate", "--transfer-every", "5"),
         ("--transfer-every=5", "tiki-taka")),
    # pulse-response at the extremes: valid inputs that are answered (exit 0, nothing on stderr)
    Case("pulse-response-tau-1e300", ("pulse-response", "--tau", "1e300"), (), status=0,
         stdout=("softbounds",)),
    Case("pulse-response-dw-min-1e-300", ("pulse-response", "--dw-min", "1e-300"), (), status=0,
         stdout=("dw_min 1e-300",)),
    Case("pulse-response-tau-tiny", ("pulse-response", "--tau", "1e-300"), ("--tau=1e-300",)),
    Case("pulse-response-dw-min-huge", ("pulse-response", "--dw-min", "1e300"),
         ("--dw-min=1e+300",)),
    Case("pulse-response-delta-nan", ("pulse-response", "--delta", "nan"), ("--delta=nan",)),
    Case("pulse-response-devices-zero", ("pulse-response", "--devices", "0"), ("--devices=0",)),
    Case("pulse-response-w0-outside", ("pulse-response", "--w0", "1e300"), ("--w0=1e+300",)),
    # found beyond the examples
    # (was an OverflowError in theory.local_sgd.averagings_after after the run)
    Case("simulate-average-every-401-digits",
         ("simulate", "--replicas", "2", "--average-every", BIG, "--steps", "10"),
         ("--average-every", "401 digits", "9.22337e+18")),
    Case("simulate-average-every-without-replicas",
         ("simulate", "--average-every", BIG, "--steps", "10"), ("--average-every",)),
    Case("simulate-programming-error-nan", ("simulate", "--replicas", "2",
                                            "--programming-error", "nan"),
         ("--programming-error=nan",)),
    Case("hardware-link-zero", (*HW, "--no-relax"), ("h.toml", "link_bytes_per_s = 0"),
         files={"h.toml": "link_bytes_per_s = 0\n" + _kind()}),
    Case("hardware-bytes-per-weight-huge", (*HW, "--no-relax"), ("h.toml", "bytes_per_weight"),
         files={"h.toml": "bytes_per_weight = 1e300\n" + _kind()}),
    Case("hardware-read-time-huge", (*HW, "--no-relax"), ("h.toml", "kinds[0].read_time_s"),
         files={"h.toml": _kind(read_time_s="1e300")}),
    Case("hardware-digital-only", (*HW, "--no-relax"), ("h.toml", "no analog kind"),
         files={"h.toml": '[[kinds]]\nname = "g"\ntype = "digital"\ncount = 2\n'}),
    # a digital kind too slow to be used is answered: the plans use the analog kind
    Case("hardware-digital-mac-time-huge", (*HW, "--no-relax"), (), status=0,
         stdout=("best plan per mode", "layout a"),
         files={"h.toml": _kind(name='"a"', count="2") + '[[kinds]]\nname = "g"\n'
                'type = "digital"\ncount = 2\nmac_time_s = 1e300\n'}),
    Case("plan-eps-inf", (*PLAN, "--eps", "inf"), ("--eps=inf", "finite")),
    Case("calibrate-theta-nan", ("calibrate", "--quick", "--theta", "nan"), ("--theta=nan",)),
    Case("figures-unknown", ("figures", "nosuch"), ("nosuch",)),
]


def _materialise(case: Case, tmp_path: Path) -> list[str]:
    for name, content in case.files.items():
        (tmp_path / name).write_text(content)
    return [arg.replace("{tmp}", str(tmp_path)) for arg in case.argv]


#: the child runs main() and reports its own peak RSS (kB) on its last stdout line; its address
#: space is capped so that a case that does allocate fails inside the child, not the machine. The
#: peak is /proc/self/status's VmHWM, the high-water mark of the child's own memory map (reset by
#: exec); getrusage's ru_maxrss would carry over the forking test process's peak
_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))
from paper_figures.cli import main

def peak_kb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

try:
    status = main(sys.argv[1:])
finally:
    print("\\nPEAK_RSS_KB", peak_kb(), flush=True)
sys.exit(status)
"""
#: address-space cap of a child (bytes): far above what a refusal needs, far below the machine
AS_LIMIT = 6 * 2**30


def _run_child(argv: list[str]) -> tuple[int, str, str, float]:
    """Run ``aimc-pipeline argv`` in a child; (status, stdout, stderr, peak RSS in MB)."""
    code = _CHILD.replace("AS_LIMIT", str(AS_LIMIT))
    env = {**os.environ, "MPLBACKEND": "Agg"}
    try:
        done = subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, env=env, text=True,
                              capture_output=True, timeout=HANG_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"no answer within {HANG_S} s (hang): {argv}")
    out, _, peak = done.stdout.rpartition("PEAK_RSS_KB")
    assert peak, f"the child did not report its peak memory: {done.stderr[-2000:]}"
    return done.returncode, out, done.stderr, int(peak) / 1024


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_fails_cleanly(case, tmp_path, capsys):
    argv = _materialise(case, tmp_path)
    if case.subprocess:
        status, out, err, rss_mb = _run_child(argv)
        assert rss_mb < MAX_RSS_MB, f"peak RSS {rss_mb:.0f} MB: refuse before allocating"
    else:
        start = time.monotonic()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a numerical warning is noise the user sees
            try:
                status = main(argv)
            except SystemExit as exit_:  # argparse
                status = exit_.code
        out, err = capsys.readouterr()
        assert time.monotonic() - start < HANG_S, f"no answer within {HANG_S} s (hang): {argv}"
    assert "Traceback" not in err, err
    assert status == case.status, (status, err[-2000:])
    lines = [line for line in err.splitlines()
             if line.strip() and not line.startswith(case.progress or "\0")]
    for text in case.stdout:
        assert text in out, f"{text!r} not on stdout:\n{out[-3000:]}"
    if not case.names:  # an input answered without a word on stderr
        assert not lines, err[-3000:]
        return
    # one line: the error, or for an answered input its one note or warning
    assert len(lines) == 1, f"expected one stderr line, got {len(lines)}:\n{err[-3000:]}"
    assert len(lines[0]) < 400, f"message too long ({len(lines[0])} characters)"
    for name in case.names:
        assert name in lines[0], f"{name!r} not named in: {lines[0]}"


def test_pinned_design_points_are_one_warning_for_the_design(monkeypatch):
    """calibrate() reports the runs' PinnedWarnings (kept by calibration_run, in whichever process
    ran it) once for the design, counting them; a failing fit says so in its one error line."""
    import importlib
    from types import SimpleNamespace

    import numpy as np

    from simulate.device import PinnedWarning
    from simulate.verification import CalibrationProblem, design
    from theory.errors import ParameterError

    calibrate_module = importlib.import_module("simulate.verification.calibration_fit")

    spec = CalibrationProblem()
    points = design(spec, sync=((2, 4, 1),), async_=((2, 1, 1),), fractions=(0.5,), steps=10,
                    seeds=2, stability=())
    results = [{"running": np.ones((2, 10)), "pinned": "lr=0.1: pinned"}, {
        "running": np.ones((2, 10)), "pinned": ""}]
    monkeypatch.setattr(calibrate_module, "run_sweep",
                        lambda *a, **k: SimpleNamespace(results=results))
    monkeypatch.setattr(calibrate_module, "fit_calibration", lambda *a, **k: "fitted")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert calibrate_module.calibrate(spec, points) == "fitted"
    (warning,) = caught
    assert issubclass(warning.category, PinnedWarning)
    assert str(warning.message).startswith("1 of 2 design points ran pinned at the device bounds")

    def failing(*args, **kwargs):
        raise ParameterError("design: 0 reached targets")

    monkeypatch.setattr(calibrate_module, "fit_calibration", failing)
    with pytest.raises(ParameterError, match=r"^design: 0 reached targets; 1 of 2 design points"):
        calibrate_module.calibrate(spec, points)
