"""bench/accelerator_sweep.sh: several arms of `accelerator.py run` in one device call, each returned as its
model parts and a meta.tar the device can send back (at most 8 files), and accelerator.py's ``with_meta``, which
puts an arm's folder back together for ``unpack``. A stand-in ``python3`` on the PATH plays the run."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("_accelerator_sweep", ROOT / "bench" / "accelerator.py")
assert _spec is not None and _spec.loader is not None
acc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(acc)

# writes what `accelerator.py run` writes into --out, or fails after its log when the arm asks for --epochs 0
FAKE = r"""#!/bin/bash
if [ "$1" = "-c" ]; then echo "stand-in python"; exit 0; fi
echo "$@" >> "$ARGS_LOG"
out=""; prev=""
for a in "$@"; do [ "$prev" = "--out" ] && out=$a; prev=$a; done
mkdir -p "$out"
echo "log of $*" > "$out/run.log"
case " $* " in *" --epochs 0 "*) echo "failed: no epochs"; exit 3;; esac
head -c 300 /dev/zero > "$out/model.onnx.part00"
head -c 100 /dev/zero > "$out/model.onnx.part01"
echo '{"oof_attack_rows": []}' > "$out/oof.json"
echo '{"files": {}}' > "$out/manifest.json"
echo "results in $out"
"""


def _sweep(tmp_path: Path, *arms: str) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    bin_dir, out, args_log = tmp_path / "bin", tmp_path / "out", tmp_path / "args.log"
    bin_dir.mkdir()
    out.mkdir()
    fake = bin_dir / "python3"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "OUT": str(out),
        "ARGS_LOG": str(args_log),
        "TMPDIR": str(tmp_path),
    }
    proc = subprocess.run(
        ["bash", str(ROOT / "bench" / "accelerator_sweep.sh"), *arms],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc, out, args_log


def test_two_arms_come_back_as_six_files_and_a_log(tmp_path: Path) -> None:
    proc, out, args_log = _sweep(tmp_path, "a", "30", "--epochs 4 --seed 7", "b", "30", "--epochs 8")
    assert proc.returncode == 0, proc.stderr
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == [
        "a/meta.tar",
        "a/model.onnx.part00",
        "a/model.onnx.part01",
        "b/meta.tar",
        "b/model.onnx.part00",
        "b/model.onnx.part01",
        "sweep.log",
    ]
    assert len(files) <= acc.MAX_RESULTS
    with tarfile.open(out / "a" / "meta.tar") as tar:
        assert sorted(m.name.lstrip("./") for m in tar.getmembers() if m.isfile()) == [
            "manifest.json",
            "oof.json",
            "run.log",
        ]
    calls = args_log.read_text().splitlines()
    assert len(calls) == 2
    assert "--device cuda" in calls[0] and calls[0].endswith("--epochs 4 --seed 7")
    assert calls[1].endswith("--epochs 8")
    log = (out / "sweep.log").read_text()
    assert "== arm a exit 0" in log and "== arm b exit 0" in log


def test_a_failed_arm_still_returns_its_log_and_the_next_arm_runs(tmp_path: Path) -> None:
    proc, out, _ = _sweep(tmp_path, "bad", "30", "--epochs 0", "good", "30", "--epochs 1")
    assert proc.returncode == 0, proc.stderr
    log = (out / "sweep.log").read_text()
    assert "== arm bad exit 3" in log and "failed: no epochs" in log
    with tarfile.open(out / "bad" / "meta.tar") as tar:
        assert [m.name.lstrip("./") for m in tar.getmembers() if m.isfile()] == ["run.log"]
    assert (out / "good" / "model.onnx.part01").exists()


def test_the_sweep_refuses_to_run_without_out(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    proc = subprocess.run(
        ["bash", str(ROOT / "bench" / "accelerator_sweep.sh"), "a", "30", "--epochs 1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0 and "OUT" in proc.stderr


def test_with_meta_puts_an_arm_back_together(tmp_path: Path) -> None:
    proc, out, _ = _sweep(tmp_path, "a", "30", "--epochs 1")
    assert proc.returncode == 0, proc.stderr
    arm = out / "a"
    arm.chmod(0o555)  # the device's results folder is read-only here
    try:
        scratch = tmp_path / "scratch"
        scratch.mkdir()
        got = acc.with_meta(arm, scratch)
    finally:
        arm.chmod(0o755)
    assert got == scratch
    assert sorted(p.name for p in scratch.iterdir()) == [
        "manifest.json",
        "model.onnx.part00",
        "model.onnx.part01",
        "oof.json",
        "run.log",
    ]
    assert (scratch / "model.onnx.part00").read_bytes() == (arm / "model.onnx.part00").read_bytes()
    # a folder already whole (accelerator.py run's own --out) is used as it is
    assert acc.with_meta(scratch, tmp_path / "unused") == scratch


def test_a_candidate_keeps_the_library_only_while_hidden5_is_unchanged(tmp_path: Path) -> None:
    meta = {"thresholds": {"injection": 0.99}, "args": {"epochs": "8"}, "trained_by": "bench/accelerator.py"}
    shipped = json.loads((acc.SHIPPED_ONNX.parent / "classifier.json").read_text(encoding="utf-8"))
    for layers, library in ((None, False), (2, False), (1, True)):
        ship = tmp_path / f"layers-{layers}"
        ship.mkdir()
        out = acc.over_shipped(ship, meta, layers)
        assert (ship / "library.npz").exists() is library
        assert ("library_left_out" in out) is not library
        assert (ship / "lexical.npz").exists()
        assert out["thresholds"] == {"injection": 0.99} and out["decision"] == shipped["decision"]
        assert out["fine_tuned_layers"] == ([6] if layers == 1 else [5, 6] if layers == 2 else list(range(7)))
