"""bench/accelerator.py's pieces that need no accelerator and no model: the weight map (which initializer of an
int8 ONNX model is which parameter, found by value and rebuilt), the pack size limit, and the results split
into parts and joined under sha256."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

_spec = importlib.util.spec_from_file_location(
    "_accelerator", Path(__file__).resolve().parents[2] / "bench" / "accelerator.py"
)
assert _spec is not None and _spec.loader is not None
acc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(acc)


def _quantise(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-tensor int8 as onnxruntime's dynamic quantisation stores a MatMul weight."""
    scale = np.float32(np.abs(a).max() / 127)
    return np.round(a / scale).astype(np.int8), scale, np.int8(0)


def _fake_model() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    params = {
        f"encoder.layer.{n}.{k}": rng.normal(0, 0.05, shape).astype(np.float32)
        for n in range(2)
        for k, shape in (
            ("attention.self.query.weight", (8, 8)),
            ("attention.self.key.weight", (8, 8)),
            ("intermediate.dense.weight", (16, 8)),
            ("output.dense.weight", (8, 16)),
            ("output.LayerNorm.weight", (8,)),
        )
    }
    raw: dict[str, np.ndarray] = {}
    for j, (name, p) in enumerate(sorted(params.items(), key=lambda kv: kv[0][::-1])):
        if p.ndim == 1:  # a float initializer, under another name
            raw[f"init_{j}"] = p.copy()
            continue
        q, scale, zero = _quantise(p.T)  # MatMul weights are stored transposed
        raw[f"onnx::MatMul_{j}_quantized"] = q
        raw[f"onnx::MatMul_{j}_scale"] = scale
        raw[f"onnx::MatMul_{j}_zero_point"] = zero
    raw["unrelated_quantized"], raw["unrelated_scale"], raw["unrelated_zero_point"] = _quantise(
        rng.normal(0, 1, (4, 8)).astype(np.float32)
    )
    return raw, params


def test_weight_map_round_trip() -> None:
    raw, params = _fake_model()
    mapping = acc.find_map(acc.dequantised(raw), params)
    assert all(m["transpose"] == (params[p].ndim == 2) for p, m in mapping.items())
    assert len({m["onnx"] for m in mapping.values()}) == len(params)
    assert acc.check_map(raw, mapping, params) <= max(
        float(v) for k, v in raw.items() if k.endswith("_scale")
    )
    rebuilt = acc.rebuild(raw, mapping)
    assert all(rebuilt[p].shape == params[p].shape for p in params)


def test_wrong_or_missing_map_refused() -> None:
    raw, params = _fake_model()
    mapping = acc.find_map(acc.dequantised(raw), params)
    q, k = "encoder.layer.0.attention.self.query.weight", "encoder.layer.0.attention.self.key.weight"
    swapped = {**mapping, q: mapping[k], k: mapping[q]}
    with pytest.raises(SystemExit, match="from its fp32 value"):
        acc.check_map(raw, swapped, params)
    untransposed = {**mapping, q: {**mapping[q], "transpose": False}}
    with pytest.raises(SystemExit, match="from its fp32 value"):
        acc.check_map(raw, untransposed, params)
    with pytest.raises(SystemExit, match="no initializer"):
        acc.check_map(raw, {p: m for p, m in mapping.items() if p != q}, params)


def test_a_fine_tuned_parameter_travels_in_the_pack() -> None:
    """Since 2026-11-30 the shipped graph's sixth layer is fine-tuned: its pre-trained parameters are no longer in
    it, so they are carried (float16) rather than refused, and every other parameter is still rebuilt."""
    raw, params = _fake_model()
    name = "encoder.layer.1.intermediate.dense.weight"
    rng = np.random.default_rng(2)
    pretrained = {**params, name: params[name] + rng.normal(0, 0.02, params[name].shape).astype(np.float32)}
    kept, carried = acc.carry_changed(raw, acc.find_map(acc.dequantised(raw), pretrained), pretrained)
    assert set(carried) == {name} and set(kept) == set(params) - {name}
    assert acc.check_map(raw, kept, pretrained, carried) < 0.01
    with pytest.raises(SystemExit, match="no initializer"):
        acc.check_map(raw, kept, pretrained)
    with pytest.raises(SystemExit, match="carried"):  # the fine-tuned value carried, not the pre-trained one
        acc.check_map(raw, kept, pretrained, {name: params[name]})


def test_pack_size_limit(tmp_path: Path) -> None:
    acc.check_pack_size(tmp_path, acc.PACK_LIMIT)
    with pytest.raises(SystemExit, match="over the 8 MiB limit"):
        acc.check_pack_size(tmp_path, acc.PACK_LIMIT + 1)


def test_parts_split_join_and_sha(tmp_path: Path) -> None:
    src, out = tmp_path / "model.onnx", tmp_path / "out"
    out.mkdir()
    data = np.random.default_rng(1).bytes(2500)
    src.write_bytes(data)
    parts = acc.split(src, out, part=1000)
    assert parts == ["model.onnx.part00", "model.onnx.part01", "model.onnx.part02"]
    assert [(out / p).stat().st_size for p in parts] == [1000, 1000, 500]
    acc.write_manifest(out, {"model": {"parts": parts}})
    acc.verify_manifest(out)
    acc.join(out, parts, tmp_path / "joined.onnx")
    assert (tmp_path / "joined.onnx").read_bytes() == data
    (out / parts[1]).write_bytes(b"x" + (out / parts[1]).read_bytes()[1:])
    with pytest.raises(SystemExit, match="sha256"):
        acc.verify_manifest(out)


@pytest.mark.parametrize("mode", ["layers", "model"])
def test_a_run_with_train_layers_changes_only_the_top_layers_and_the_head(mode: str) -> None:
    """``run --train-layers 1 --probe-epochs 1`` (the CPU recipe's shape on the device): the embeddings and the
    lower layers, and so ``hidden5``, come back as they went in; the top layer and the head are trained."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from types import SimpleNamespace

    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=128, hidden_size=16, num_hidden_layers=6, num_attention_heads=2, intermediate_size=32
    )
    config._attn_implementation = "eager"
    bert = transformers.BertModel(config, add_pooling_layer=False)
    before = {k: v.detach().clone() for k, v in bert.state_dict().items()}
    rng = np.random.default_rng(0)
    n = 48
    data = {
        "ids": rng.integers(103, 128, (n, 10)),
        "lengths": rng.integers(4, 11, n),
        "label": rng.integers(0, 4, n),
    }
    args = SimpleNamespace(
        seed=1, lr=1e-2, lr_encoder=1e-2, lr_head_ft=None, batch=16, smoke=3, epochs=1, energy=0.05,
        margin=4.0, train_layers=1, probe_epochs=1,
    )  # fmt: skip
    model = acc.train_one(
        torch,
        lambda: acc.make_model(torch, bert, [4, 5, 6], 8, mode),
        data,
        np.arange(n),
        np.ones(n),
        args,
        torch.device("cpu"),
        60.0,
        acc.Log(),
        "test",
    )
    after = bert.state_dict()
    changed = {
        k.split(".")[0] + "." + k.split(".")[2] for k in before if not torch.equal(before[k], after[k])
    }
    assert changed == {"encoder.5"}, changed  # only the sixth layer of the encoder (embeddings untouched)
    x = torch.from_numpy(data["ids"][:4]).long()
    with torch.no_grad():
        _, h5 = model(x, torch.ones_like(x))
        reference = bert(input_ids=x, attention_mask=torch.ones_like(x), output_hidden_states=True)
    assert torch.allclose(h5, reference.hidden_states[5], atol=1e-5)
