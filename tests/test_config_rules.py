"""simulate.config.RULES row by row: a given field that does not apply is refused, in one
line naming it (the field in the Python API, the flag on the command line); where it applies it
passes."""

from __future__ import annotations

import dataclasses

import pytest

from simulate import RULES, NotApplicableError, PipelineSpec, SimConfig, TikiTakaSpec, UpdateSpec
from simulate.config import AtLeast, check_rules
from theory.errors import ParameterError

#: per row: a given value of its field, a run where the row fails, a run where it holds
GIVEN = {"micro_batches": 4, "update": "pulsed", "pulse_type": "deterministic",
         "pulse_method": "loop", "update_management": True, "bl_management": True,
         "forward_io": "companion", "backward_io": "companion", "transfer_every": 5,
         "transfer_lr": 0.5, "tt_gamma": 0.3, "transfer_slice": "all", "fast_device": "digital",
         "transfer_reset": True, "digital_stages": "1", "data": "digits-holdout",
         "grad_bias": 0.1, "replicas": 2, "average_every": 4, "programming_error": 0.01}
FAILS = {("mode",): dict(mode="async"), ("update",): dict(update="expected"),
         ("pulse_type",): dict(update="pulsed", pulse_type="deterministic")}


def _failing(rule) -> dict:
    """A run breaking ``rule``: its condition field at a value outside the condition."""
    cond = rule.condition
    if isinstance(cond, AtLeast):
        return {cond.field: cond.low - 1}
    if cond.field == "problem":
        return dict(problem="quadratic") if "digits-mlp" in cond.values else \
            dict(problem="digits-mlp")
    if cond.field == "algorithm":
        return dict(algorithm="digital") if "digital" not in cond.values else \
            dict(algorithm="tiki-taka")
    return FAILS[(cond.field,)]


def _holding(rule) -> dict:
    """A run where every row of ``rule.field`` holds."""
    out = {}
    for row in RULES:
        if row.field != rule.field:
            continue
        cond = row.condition
        if isinstance(cond, AtLeast):
            out[cond.field] = cond.low
        else:
            out.setdefault(cond.field, cond.values[0])
    if rule.field in ("update_management", "bl_management"):
        out["pulse_type"] = "stochastic"
    if out.get("algorithm") == "mixed" or rule.field == "digital_stages":
        out["stages"] = 2
    if out.get("problem", "").startswith("digits"):
        out["steps"] = 10
    return out


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.field}-{r.condition.field}")
def test_a_given_field_that_does_not_apply_is_refused(rule):
    settings = _holding(rule) | _failing(rule) | {rule.field: GIVEN[rule.field]}
    with pytest.raises(NotApplicableError) as info:
        SimConfig(**settings)
    text = str(info.value)
    assert text.startswith(f"{rule.field}=") and "\n" not in text
    assert " only, not " in text and rule.reason in text
    flags = info.value.flag_message
    assert flags.startswith("--" + rule.field.replace("_", "-")) and "\n" not in flags


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.field}-{r.condition.field}")
def test_where_it_applies_the_field_passes(rule):
    config = SimConfig(**(_holding(rule) | {rule.field: GIVEN[rule.field]}))
    assert getattr(config, rule.field) == GIVEN[rule.field] or rule.field == "digital_stages"


def test_a_field_at_its_default_is_never_refused():
    SimConfig(mode="async", micro_batches=1, transfer_every=1, pulse_type="stochastic")


def test_every_row_names_a_field_and_a_condition_field():
    names = {f.name for f in dataclasses.fields(SimConfig)}
    assert all(set(rule.fields()) <= names for rule in RULES)
    assert set(GIVEN) == {rule.field for rule in RULES}


def test_check_rules_reads_only_the_fields_it_is_given():
    check_rules({"transfer_every": 5})  # no algorithm: the row is skipped
    with pytest.raises(ParameterError, match="^--transfer-every=5 applies to --algorithm "
                                             "tiki-taka only"):
        check_rules({"algorithm": "analog", "transfer_every": 5}, flags=True)


def test_parts_compose_and_to_dict_is_flat():
    flat = SimConfig(mode="sync", stages=4, micro_batches=4, algorithm="tiki-taka",
                     transfer_every=4, update="pulsed")
    parts = SimConfig(pipeline=PipelineSpec(mode="sync", stages=4, micro_batches=4),
                      algorithm="tiki-taka", tiki_taka=TikiTakaSpec(transfer_every=4),
                      update=UpdateSpec(update="pulsed"))
    assert parts == flat and parts.to_dict() == flat.to_dict()
    assert list(flat.to_dict()) == [f.name for f in dataclasses.fields(SimConfig)]
    assert flat.pipeline == PipelineSpec(mode="sync", stages=4, micro_batches=4)
    assert flat.parts.update.update == "pulsed" and flat.update == "pulsed"
    assert dataclasses.replace(flat, lr=0.1).lr == 0.1
    assert SimConfig.from_dict(flat.to_dict()) == flat
    assert SimConfig.from_dict({"pipeline": {"mode": "sync", "stages": 4, "micro_batches": 4},
                                "algorithm": "tiki-taka", "transfer_every": 4,
                                "update": "pulsed"}) == flat
    with pytest.raises(ParameterError, match="^stages=2 is given twice"):
        SimConfig(pipeline=PipelineSpec(stages=4), stages=2)
    with pytest.raises(ParameterError, match="^bogus=1 is not a field"):
        SimConfig.from_dict({"bogus": 1})


def test_toml_is_checked_by_the_same_rules(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('algorithm = "analog"\ntransfer_every = 5\n')
    with pytest.raises(ParameterError,
                       match="^config='.*run.toml': transfer_every = 5 applies to algorithm="):
        SimConfig.from_toml(path)
    path.write_text('[pipeline]\nmode = "sync"\nstages = 2\n')
    assert SimConfig.from_toml(path).stages == 2


def test_each_field_is_described_once_in_its_spec():
    for f in dataclasses.fields(SimConfig):
        assert f.metadata["help"] and f.metadata["part"]
    assert "transfer_every" in SimConfig.__doc__ and "RULES" in SimConfig.__doc__


def test_the_flat_fields_are_the_specs_fields_in_field_order():
    from simulate.config import FIELD_ORDER
    from simulate.specs import SPECS

    specs = {f.name: (part, f) for part, spec in SPECS.items() for f in dataclasses.fields(spec)}
    flat = dataclasses.fields(SimConfig)
    assert [f.name for f in flat] == list(FIELD_ORDER) and set(FIELD_ORDER) == set(specs)
    assert list(SimConfig().to_dict()) == list(FIELD_ORDER)
    for f in flat:  # type, default and description: the spec's field, nothing restated
        part, spec_field = specs[f.name]
        assert (f.type, f.default) == (spec_field.type, spec_field.default)
        assert dict(f.metadata) == {**spec_field.metadata, "part": part}


@pytest.mark.parametrize(("argv", "flag"), [
    (["--algorithm", "analog", "--transfer-every", "5"], "--transfer-every=5"),
    (["--update", "expected", "--pulse-type", "deterministic"], "--pulse-type=deterministic"),
    (["--mode", "async", "--micro-batches", "4"], "--micro-batches=4"),
])
def test_the_issue_examples_exit_2_with_one_line_naming_the_flag(argv, flag, capsys):
    from paper_figures.cli import main

    assert main(["simulate", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert captured.err.startswith(f"aimc-pipeline simulate: error: {flag} applies to ")
