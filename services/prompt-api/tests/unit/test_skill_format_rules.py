"""Agent Skills format rules, without HTTP or a database."""

import pytest

from stockade.prompt_api.errors import InvalidContent, InvalidPath
from stockade.prompt_api.schemas import Base64File
from stockade.prompt_api.settings import LimitSettings
from stockade.prompt_api.skill_format import (
    check_front_matter,
    check_path,
    check_skill,
    check_skill_name,
    parse_front_matter,
)

MD = "---\nname: my-skill\ndescription: Does things.\n---\nBody\n"


@pytest.mark.parametrize("name", ["a", "my-skill", "a1-b2-c3", "x" * 64])
def test_valid_names(name):
    assert check_skill_name(name) == name


@pytest.mark.parametrize(
    "name", ["", "A", "-a", "a-", "a--b", "a_b", "a.b", "..", "a/b", "x" * 65, "ü", "%2e"]
)
def test_invalid_names(name):
    with pytest.raises(InvalidPath):
        check_skill_name(name)


@pytest.mark.parametrize("path", ["a.txt", "references/x.md", "a/b/c/d.bin", "scripts/run_1.sh"])
def test_valid_paths(path):
    assert check_path(path) == path


@pytest.mark.parametrize(
    "path",
    [
        "",
        "/abs",
        "../x",
        "a/../b",
        "a/./b",
        "a//b",
        "a\\b",
        "a\x00b",
        "c:x",
        "a/%2e%2e/b",
        ".hidden",
        "-x",
        "/".join(["d"] * 9),
        "x" * 513,
    ],
)
def test_traversal_shaped_paths(path):
    with pytest.raises(InvalidPath):
        check_path(path)


def test_front_matter_split_keeps_body():
    front, body = parse_front_matter("\ufeff" + MD)
    assert front == {"name": "my-skill", "description": "Does things."} and body == "Body\n"


def test_check_skill_decodes_files_and_sorts():
    front, md, files = check_skill(
        "my-skill", MD, {"z.txt": "zed", "a.bin": Base64File(base64="AAEC")}, LimitSettings()
    )
    assert front["name"] == "my-skill" and md == MD.encode()
    assert [(f.path, f.data) for f in files] == [("a.bin", b"\x00\x01\x02"), ("z.txt", b"zed")]


@pytest.mark.parametrize(
    "md",
    [
        MD.replace("name: my-skill", "name: other"),
        MD.replace("description: Does things.\n", ""),
        MD.replace("description: Does things.", "description: ''"),
        MD.replace("---\nBody", "extra: 1\n---\nBody"),
        MD.replace("---\nBody", "metadata: [1]\n---\nBody"),
        MD.replace("---\nBody", "allowed-tools: {a: 1}\n---\nBody"),
        MD.replace("---\nBody", "compatibility: " + "x" * 501 + "\n---\nBody"),
        MD.replace("---\nBody", "license: 3\n---\nBody"),
        "---\n- a list\n---\n",
    ],
)
def test_invalid_front_matter(md):
    with pytest.raises(InvalidContent):
        check_skill("my-skill", md, {}, LimitSettings())


def test_skill_md_size_limit():
    with pytest.raises(InvalidContent, match="limit"):
        check_skill("my-skill", MD + "x" * 100, {}, LimitSettings(max_skill_md_bytes=60))


def _billion_laughs(levels: int = 9) -> str:
    """Nine levels of nine aliases: 396 bytes of YAML, 9**9 = 387,420,489 strings once expanded."""
    lines = [
        "name: my-skill",
        "description: Does things.",
        "metadata:",
        "  a: &a [" + ",".join(['"lol"'] * 9) + "]",
    ]
    previous = "a"
    for label in "bcdefghijklmnop"[: levels - 1]:
        lines.append(f"  {label}: &{label} [" + ",".join([f"*{previous}"] * 9) + "]")
        previous = label
    return "---\n" + "\n".join(lines) + "\n---\nBody\n"


@pytest.mark.timeout(30)
def test_yaml_aliases_are_refused_before_anything_expands_them():
    with pytest.raises(InvalidContent, match=r"YAML alias \(\*a, line 5\)"):
        check_skill("my-skill", _billion_laughs(), {}, LimitSettings())
    merge = MD.replace("---\nBody", "metadata:\n  base: &base {x: 1}\n  more:\n    <<: *base\n---\nBody")
    with pytest.raises(InvalidContent, match="alias"):
        parse_front_matter(merge)


def test_anchors_without_aliases_and_moderate_nesting_are_fine():
    front, _ = parse_front_matter(MD.replace("---\nBody", "metadata: &m {a: [[[[1]]]]}\n---\nBody"))
    assert front["metadata"] == {"a": [[[[1]]]]}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("depth", [33, 5_000])
def test_deep_nesting_is_refused_not_a_recursion_error(depth):
    md = MD.replace("---\nBody", "metadata: {a: " + "[" * depth + "]" * depth + "}\n---\nBody")
    with pytest.raises(InvalidContent, match="nested deeper than 32 levels"):
        parse_front_matter(md)


@pytest.mark.parametrize(
    "metadata", ["{a: !!binary aGVsbG8=}", "{n: .nan}", "{i: -.inf}", "{deep: {deeper: [!!binary aGVsbG8=]}}"]
)
def test_front_matter_values_json_cannot_carry_are_refused_not_500(metadata):
    md = MD.replace("---\nBody", f"metadata: {metadata}\n---\nBody")
    with pytest.raises(InvalidContent, match="JSON cannot carry"):
        check_front_matter(parse_front_matter(md)[0], "my-skill")


def test_nested_dates_are_stored_as_text():
    md = MD.replace("---\nBody", "metadata: {released: 2001-12-14, at: [2001-12-14T21:59:43Z]}\n---\nBody")
    stored = check_front_matter(parse_front_matter(md)[0], "my-skill")
    assert stored["metadata"] == {"released": "2001-12-14", "at": ["2001-12-14T21:59:43+00:00"]}
