"""Secrets evaluation helpers for eval_detectors.py: line-level precision/recall on CredSweeper's samples
against its expected output, file-disjoint train/test split (the upstream data has no split).

Run alone: ``.venv/bin/python bench/eval_secrets.py [--split train|test] [--show]`` prints the scanner's and
detect-secrets' numbers on one split; ``--show`` lists missed findings and false-positive lines (use it on
the train split only: tune on train, report on test).
``--vetoes`` adds how many candidates each named veto rejected (``SecretScanner.report``).

``--credsweeper-json`` scores a current CredSweeper's own report with the same harness and counts how many of our
false-positive lines it reports too (lines its rules find that the labels, written by its ML filter, dropped).
CredSweeper is not a dependency; run it in a venv of its own::

    python3 -m venv /tmp/cs && /tmp/cs/bin/pip install credsweeper
    /tmp/cs/bin/credsweeper --path ../shared/data/secrets/samples --ml_threshold 0 --save-json /tmp/rules.json
    /tmp/cs/bin/credsweeper --path ../shared/data/secrets/samples --save-json /tmp/ml.json

``--corpus DIR --labels REPORT`` scores any other folder the same way, with a CredSweeper (ML) report of that
folder as its labels; ``--show`` then prints each missed and false-positive line with the rules that fired. This
is how the scanner is developed beyond the train split without touching the test split: other scanners'
fixtures (whispers, detect-secrets, gitleaks), installed-package files, newer CredSweeper samples that share
under 30% of their lines with ours::

    /tmp/cs/bin/credsweeper --path /tmp/corpus --save-json /tmp/corpus_ml.json
    .venv/bin/python bench/eval_secrets.py --corpus /tmp/corpus --labels /tmp/corpus_ml.json --show
"""

from __future__ import annotations

import bisect
import codecs
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

Line = tuple[str, int]  # (file name, 1-based line number)


# Extensions CredSweeper's plain scan (the run that wrote expected_output.json) never reads: its config.json
# exclude lists "containers", "documents" and "extension". Those files carry no labels whatever they hold, so
# they are left out of both scanners' scores rather than counting a real key in a PDF as a false positive.
UNLABELLED_EXTENSIONS = frozenset(
    {
        # containers
        ".aar",
        ".apk",
        ".bz2",
        ".class",
        ".gz",
        ".jar",
        ".lzma",
        ".rpm",
        ".tar",
        ".war",
        ".whl",
        ".xz",
        ".zip",
        # documents
        ".doc",
        ".docx",
        ".odp",
        ".ods",
        ".odt",
        ".pdf",
        ".ppt",
        ".pptx",
        ".xls",
        ".xlsx",
        # other
        ".7z",
        ".a",
        ".aac",
        ".avi",
        ".bin",
        ".bmp",
        ".css",
        ".dmg",
        ".ear",
        ".eot",
        ".elf",
        ".exe",
        ".gif",
        ".gmo",
        ".ico",
        ".img",
        ".info",
        ".jpeg",
        ".jpg",
        ".lib",
        ".map",
        ".m4a",
        ".mat",
        ".mo",
        ".mov",
        ".mp3",
        ".mp4",
        ".mpg",
        ".mkv",
        ".npy",
        ".npz",
        ".obj",
        ".oga",
        ".ogg",
        ".ogv",
        ".ops",
        ".pak",
        ".png",
        ".psd",
        ".pyc",
        ".pyd",
        ".pyo",
        ".rar",
        ".rc",
        ".rc2",
        ".realm",
        ".res",
        ".s7z",
        ".scss",
        ".so",
        ".sum",
        ".svg",
        ".swf",
        ".tif",
        ".tiff",
        ".tlb",
        ".ttf",
        ".vcxproj",
        ".vdproj",
        ".wav",
        ".webm",
        ".webp",
        ".wma",
        ".woff",
        ".woff2",
        ".yuv",
    }
)


def split_files(samples: Path, split: str) -> list[Path]:
    """The split's files (a file's side is fixed by a hash of its name), without the unlabelled extensions."""
    files = sorted(p for p in samples.rglob("*") if p.is_file())
    return [
        p
        for p in files
        if (int(hashlib.sha256(p.name.encode()).hexdigest(), 16) % 10 < 6) == (split == "train")
        and p.suffix.lower() not in UNLABELLED_EXTENSIONS
    ]


def expected_findings(expected: Path, names: set[str], root: Path | None = None) -> list[frozenset[Line]]:
    """One entry per expected finding: the set of lines it spans (a PEM key spans its body lines). Paths are
    taken relative to ``root`` when given (a CredSweeper run on another folder), else after ``samples/``."""
    out = []
    prefix = f"{root.resolve()}/" if root else None
    for item in json.loads(expected.read_text()):
        lines = set()
        for ld in item["line_data_list"]:
            # tests/samples/x upstream, .../samples/x in a local run
            name = ld["path"].removeprefix(prefix) if prefix else ld["path"].split("samples/", 1)[-1]
            if name in names and ld["line_num"] > 0:
                lines.add((name, ld["line_num"]))
        if lines:
            out.append(frozenset(lines))
    return out


def read_text(path: Path) -> str | None:
    """Decode a file the way CredSweeper (whose output is the label set) does: UTF-8, then UTF-16 when a byte-order
    mark says so, then Latin-1, which decodes any byte. Binaries (a NUL byte in the first 8 KiB, with no UTF-16
    mark) are skipped: the labels come from a plain scan, not the archive-unpacking one."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            return None
    if b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


_XML_START_TAG = re.compile(r"<[A-Za-z_][^<>]*>")


def lines_of_hits(text: str, starts: list[int], *, xml: bool = False) -> set[int]:
    """1-based line of each offset. In an ``.xml`` file CredSweeper parses the XML and reports an element's value
    on the line of its opening tag (lxml's sourceline), so there a hit counts on the line of the nearest start
    tag before it."""
    line_starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    if xml:
        tags = [m.start() for m in _XML_START_TAG.finditer(text)]
        starts = [tags[i - 1] if (i := bisect.bisect_right(tags, s)) else s for s in starts]
    return {bisect.bisect_right(line_starts, s) for s in starts}


def run_scanner(files: list[Path], root: Path, scan: Callable[[str], list[int]]) -> set[Line]:
    found = set()
    for f in files:
        text = read_text(f)
        if text is None:
            continue
        name = str(f.relative_to(root))
        found |= {(name, n) for n in lines_of_hits(text, scan(text), xml=f.suffix.lower() == ".xml")}
    return found


_INDENT = re.compile(r"[ \t]*")


def _indent(text: str, at: int) -> int:
    m = _INDENT.match(text, at)
    return m.end() - at if m else 0


def run_detect_secrets(files: list[Path], root: Path) -> set[Line]:
    """detect-secrets alone, default plugins and filters, scanning each file."""
    from detect_secrets.core.secrets_collection import SecretsCollection
    from detect_secrets.settings import default_settings

    found = set()
    with default_settings():
        for f in files:
            coll = SecretsCollection()
            coll.scan_file(str(f))
            name = str(f.relative_to(root))
            lines = [secret.line_number for _, secret in coll]
            text = read_text(f) if f.suffix.lower() == ".xml" else None
            if text is not None:  # the same XML attribution as ours: the offset of the line's first character
                offsets = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
                lines = list(
                    lines_of_hits(
                        text, [offsets[n - 1] + _indent(text, offsets[n - 1]) for n in lines], xml=True
                    )
                )
            found |= {(name, n) for n in lines}
    return found


def prf(found: set[Line], expected: list[frozenset[Line]]) -> dict[str, Any]:
    """Recall: expected findings with at least one reported line. Precision: reported lines that belong to
    some expected finding."""
    all_lines = set().union(*expected) if expected else set()
    hit = sum(1 for f in expected if f & found)
    good = len(found & all_lines)
    p = good / len(found) if found else 0.0
    r = hit / len(expected) if expected else 0.0
    return {
        "precision": p,
        "recall": r,
        "f1": 2 * p * r / (p + r) if p + r else 0.0,
        "reported": len(found),
        "expected": len(expected),
        "fp_lines": len(found - all_lines),
        "missed": len(expected) - hit,
    }


def credsweeper_lines(report: Path, names: set[str], root: Path | None = None) -> set[Line]:
    """The (file, line) pairs of a CredSweeper JSON report, for the given files."""
    return set().union(*expected_findings(report, names, root))


def corpus_files(root: Path) -> list[Path]:
    """Every file of a development corpus, without the extensions CredSweeper's plain scan skips."""
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() not in UNLABELLED_EXTENSIONS)


@lru_cache(maxsize=64)
def _file_lines(path: Path) -> list[str]:
    return (read_text(path) or "").splitlines()


def _show_line(root: Path, line: Line, rules: dict[Line, set[str]]) -> str:
    lines = _file_lines(root / line[0])  # many shown lines share a file: read and split it once
    body = lines[line[1] - 1] if line[1] <= len(lines) else ""
    return f"{line[0]}:{line[1]} [{','.join(sorted(rules.get(line, ())))}] {body.strip()[:160]}"


def main() -> None:
    import argparse

    from stockade.guardrails.checks.exfiltration.secrets import SecretScanner

    parser = argparse.ArgumentParser()
    parser.add_argument("--split", choices=("train", "test"), default="test")
    parser.add_argument("--show", action="store_true", help="List misses and false positives.")
    parser.add_argument(
        "--vetoes",
        action="store_true",
        help="Also count the candidates each named veto rejected (all files).",
    )
    parser.add_argument(
        "--credsweeper-json",
        type=Path,
        action="append",
        default=[],
        help="A CredSweeper --save-json report of the samples (run in its own venv, see the module docstring); "
        "scored the same way, and counted against our false-positive lines. Repeat for several reports.",
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        help="Score another folder instead of the samples (a development corpus: other scanners' fixtures, "
        "installed packages), with --labels giving the findings; --show there prints each line and our rules.",
    )
    parser.add_argument(
        "--labels", type=Path, help="With --corpus: the CredSweeper (ML) --save-json report of that folder."
    )
    args = parser.parse_args()
    if args.corpus:
        if not args.labels:
            parser.error("--corpus needs --labels (a CredSweeper --save-json report of that folder)")
        root, split, label_root = args.corpus.resolve(), "corpus", args.corpus.resolve()
        files, labels = corpus_files(root), args.labels
    else:
        data = Path(__file__).resolve().parents[2] / "shared" / "data" / "secrets"
        root, split, label_root = data / "samples", args.split, None
        files, labels = split_files(root, args.split), data / "expected_output.json"
    names = {str(f.relative_to(root)) for f in files}
    expected = expected_findings(labels, names, label_root)
    scanner = SecretScanner()
    rules: dict[Line, set[str]] = {}  # each reported line's rule names, for --show
    vetoes: Counter[str] = Counter()
    for f in files:  # as run_scanner does, keeping the rules
        text = read_text(f)
        if text is None:
            continue
        name = str(f.relative_to(root))
        report = scanner.report(text)
        vetoes += report.veto_counts
        for h in report.hits:
            for n in lines_of_hits(text, [h.start], xml=f.suffix.lower() == ".xml"):
                rules.setdefault((name, n), set()).add(h.rule)
    ours = set(rules)
    result = {"split": split, "files": len(files), "ours": prf(ours, expected)}
    if not args.corpus:  # the baseline of the reported figure; hours on a large corpus
        result["detect_secrets"] = prf(run_detect_secrets(files, root), expected)
    if args.vetoes:
        result["vetoes"] = dict(vetoes.most_common())
    lines = set().union(*expected) if expected else set()
    for cs_report in args.credsweeper_json:
        theirs = credsweeper_lines(cs_report, names, label_root)
        result[f"credsweeper:{cs_report.name}"] = prf(theirs, expected) | {
            "our_fp_lines_it_reports": len((ours - lines) & theirs)
        }
    print(json.dumps(result, indent=1))
    if args.show:
        for finding in expected:
            if not finding & ours:
                print("MISS", _show_line(root, min(finding), rules) if args.corpus else min(finding))
        for line in sorted(ours - lines):
            print("FP  ", _show_line(root, line, rules) if args.corpus else line)


__all__ = ["expected_findings", "prf", "run_detect_secrets", "run_scanner", "split_files"]

if __name__ == "__main__":
    main()
