"""Model descriptions: built-ins, TOML files, tiles, errors."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bounds import Layer, Model, list_models, load_model, model_from_table
from theory import ParameterError


def test_builtins_are_listed_and_load():
    names = list_models()
    assert names == sorted(names)
    assert {"digits-mlp", "digits-resmlp", "resnet-cnn", "llama2-7b"} <= set(names)
    for name in names:
        model = load_model(name)
        assert model.name == name and len(model) >= 1


@pytest.mark.parametrize("problem", ["digits-mlp", "digits-resmlp"])
def test_digits_models_match_the_simulator_networks(problem):
    networks = pytest.importorskip("simulate.problems.network")
    net = networks.Network.build(problem, networks.NetworkSpec(), 1, 64, 10)
    shapes = [(layer.fan_in, layer.fan_out) for stage in net.stages for layer in stage]
    model = load_model(problem)
    assert [(layer.rows, layer.cols) for layer in model.layers] == shapes
    assert all(layer.mvms_per_sample == 1 for layer in model.layers)


def test_llama_shapes_and_sequence_length():
    d, hidden, blocks = 4096, 11008, 32  # Llama-2-7B: d_model, MLP width, blocks
    model = load_model("llama2-7b", sequence_length=512)
    assert len(model) == 7 * blocks
    shapes = [(layer.rows, layer.cols) for layer in model.layers[:7]]
    assert shapes == [(d, d)] * 4 + [(d, hidden), (d, hidden), (hidden, d)]
    assert model.weights == blocks * (4 * d * d + 3 * d * hidden)
    assert set(model.work.tolist()) == {512}
    per_block = 4 * math.ceil(d / 128) ** 2 + 3 * math.ceil(d / 128) * math.ceil(hidden / 128)
    assert int(model.tiles(128, 128).sum()) == blocks * per_block
    assert load_model("llama2-7b").parameters["sequence_length"] == 4096


def test_resnet_convs_are_im2col_matrices():
    model = load_model("resnet-cnn")
    stem = model.layers[0]
    assert (stem.rows, stem.cols, stem.mvms_per_sample) == (3 * 3 * 3, 64, 32 * 32)
    # every 3 x 3 conv has k*k*c_in rows; output positions shrink 4x per stride-2 stage
    for layer in model.layers[1:-1]:
        assert layer.rows % 9 == 0 or layer.name.startswith("short")
    assert model.layers[-1].cols == 10


@given(st.integers(1, 5000), st.integers(1, 5000), st.integers(1, 512), st.integers(1, 512))
def test_tiles_cover_the_matrix(rows, cols, tr, tc):
    tiles = Layer("x", rows, cols).tiles(tr, tc)
    assert tiles * tr * tc >= rows * cols
    assert (math.ceil(rows / tr) - 1) * tr < rows and (math.ceil(cols / tc) - 1) * tc < cols
    assert tiles == math.ceil(rows / tr) * math.ceil(cols / tc)


def test_user_toml_file(tmp_path):
    path = tmp_path / "net.toml"
    path.write_text(
        'name = "net"\n[parameters]\ntokens = 8\n'
        '[[blocks]]\nname = "blk"\nrepeat = 2\nlayers = [\n'
        '  { name = "q", rows = 16, cols = 16, mvms_per_sample = "tokens" },\n'
        '  { name = "o", rows = 16, cols = 4, activations = 3 },\n]\n'
    )
    model = load_model(path)
    assert [layer.name for layer in model.layers] == ["blk1.q", "blk1.o", "blk2.q", "blk2.o"]
    assert model.work.tolist() == [8, 1, 8, 1]
    assert model.activations.tolist() == [16 * 8, 3, 16 * 8, 3]
    assert load_model(path, tokens=2).work.tolist() == [2, 1, 2, 1]


@pytest.mark.parametrize(
    "table, match",
    [
        ({"name": "x", "blocks": [{"layers": [{"rows": 1, "cols": 1, "depth": 3}]}]},
         "unknown key 'depth'.*valid keys: name, rows, cols"),
        ({"name": "x", "colour": 1}, "unknown key 'colour'"),
        ({"name": "x", "blocks": [{"layers": [{"rows": 1}]}]}, "missing key 'cols'"),
        ({"name": "x", "blocks": [{"layers": [{"rows": 0, "cols": 1}]}]},
         r"rows=0.*\[1, 2.14748e\+09\]"),
        ({"name": "x", "blocks": [{"layers": [{"rows": 10**30, "cols": 1}]}]},
         r"rows=1000000000000000000000000000000 is out of range; valid range \[1, 2.14748e\+09\]"),
        ({"name": "x", "blocks": [{"layers": [{"rows": 1, "cols": 10**400}]}]},
         r"cols=.*\(401 digits\) is out of range"),
        ({"name": "x", "blocks": [{"repeat": 10**8, "layers": [{"rows": 1, "cols": 1}]}]},
         r"repeat=100000000 is out of range; valid range \[1, 1e\+06\]"),
        ({"name": "x", "blocks": [{"repeat": 10**400, "layers": [{"rows": 1, "cols": 1}]}]},
         r"repeat=.*\(401 digits\) is out of range"),
        ({"name": "x", "blocks": [{"repeat": 600000, "layers": [{"rows": 1, "cols": 1}] * 2}]},
         r"repeat=600000 gives 1.2e\+06 layers, more than the limit of 1e\+06"),
        ({"name": "x", "blocks": [{"name": ["b"], "layers": [{"rows": 1, "cols": 1}]}]},
         "name=\\['b'\\] of block 1 of model 'x' is not a string"),
        ({"name": "x", **{f"k{i}": 1 for i in range(20000)}},
         r"^20000 unknown keys: 'k0', 'k1', 'k10', 'k100', 'k1000', \.\.\. in model"),
        ({"name": "x", "blocks": [{"layers": [{"rows": 1, "cols": 1, "mvms_per_sample": "T"}]}]},
         "names no parameter"),
        ({"name": "x", "blocks": []}, "has no layers"),
        ({"name": "x", "parameters": 5, "blocks": []}, "parameters must be a TOML table"),
        ({"name": "x", "blocks": [{"layers": "abc"}]}, "layers must be an array of tables"),
    ],
)
def test_bad_descriptions_name_the_problem(table, match):
    with pytest.raises(ParameterError, match=match):
        model_from_table(table)


def test_unknown_model_lists_builtins():
    with pytest.raises(ParameterError, match="built-in models: digits-mlp"):
        load_model("no-such-model")
    with pytest.raises(ParameterError, match="has no parameter 'depth'"):
        load_model("digits-mlp", depth=3)


def test_model_rejects_non_layers():
    with pytest.raises(ParameterError, match="is not a Layer"):
        Model("x", ((1, 2),))


def test_repeat_is_refused_before_expanding():
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    table = {"name": "x", "blocks": [{"repeat": 10**6, "layers": [{"rows": 1, "cols": 1}] * 20}]}
    with pytest.raises(ParameterError, match="2e\\+07 layers"):
        model_from_table(table)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024  # kB


def test_deeply_nested_model_file_names_the_flag(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text("x = " + "[" * 2000 + "]" * 2000 + "\n")
    with pytest.raises(ParameterError, match="^model='.*m.toml': values nested deeper than"):
        load_model(path)
    path.write_text("x = " + "[" * 40 + "]" * 40 + "\n")  # parses, but beyond MAX_TOML_DEPTH
    with pytest.raises(ParameterError, match="limit of 32 levels"):
        load_model(path)


def test_missing_model_file_carries_its_name(tmp_path):
    path = tmp_path / "missing.toml"
    with pytest.raises(FileNotFoundError) as info:
        load_model(path)
    assert info.value.filename == str(path)
