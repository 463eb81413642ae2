"""Agent Skills format checks: SKILL.md front matter, file paths, sizes, UTF-8 and base64 (README, Bodies)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import yaml

from stockade.prompt_api.errors import InvalidContent, InvalidPath
from stockade.prompt_api.schemas import Base64File
from stockade.prompt_api.settings import LimitSettings

NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")
KNOWN_KEYS = frozenset({"name", "description", "license", "compatibility", "metadata", "allowed-tools"})
RESERVED = frozenset({"SKILL.md", "index.json"})
MAX_DEPTH = 8
MAX_PATH = 512


@dataclass(frozen=True, slots=True)
class ValidFile:
    path: str
    data: bytes


def check_skill_name(name: str) -> str:
    """A skill name as the Agent Skills format defines it; anything else (``..``, ``/``, ``%``) is refused."""
    if not 1 <= len(name) <= 64 or not NAME.fullmatch(name):
        raise InvalidPath(
            f"invalid skill name {name!r}: 1-64 lowercase letters, digits and single hyphens, "
            "not starting or ending with a hyphen"
        )
    return name


def check_path(path: str) -> str:
    """A relative, /-separated path without traversal; refused (never normalised) otherwise."""
    if not path or len(path) > MAX_PATH or path.startswith("/") or any(c in path for c in "\\\x00:%"):
        raise InvalidPath(f"invalid file path {path!r}: relative, '/'-separated, no '\\', NUL, ':' or '%'")
    parts = path.split("/")
    if len(parts) > MAX_DEPTH or not all(SEGMENT.fullmatch(p) and p not in {".", ".."} for p in parts):
        raise InvalidPath(
            f"invalid file path {path!r}: each segment is letters, digits, '.', '_' or '-' "
            f"(not starting with '.' or '-'), at most {MAX_DEPTH} deep"
        )
    return path


MAX_YAML_DEPTH = 32


class FrontMatterLoader(yaml.SafeLoader):
    """PyYAML's safe loader without aliases and with bounded nesting.

    An alias is a reference, so ``safe_load`` itself stays fast, but every later copy expands it: nine levels of
    nine aliases (a few hundred bytes, "billion laughs") become 387 million strings when the front matter is
    written as JSON. Nesting is bounded because the composer recurses once per level (a RecursionError, not a
    422, at about a thousand). Anchors alone are harmless and stay allowed.
    """

    what = "SKILL.md front matter"  # the document, as the refusals name it

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]  # types-pyyaml leaves Parser.peek_event unannotated
            raise InvalidContent(
                f"{self.what} uses a YAML alias (*{event.anchor}, line {event.start_mark.line + 1}): "
                "aliases (and '<<' merge keys) are not allowed; write the value out"
            )
        if self._depth >= MAX_YAML_DEPTH:
            raise InvalidContent(f"{self.what} is nested deeper than {MAX_YAML_DEPTH} levels")
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def parse_front_matter(skill_md: str) -> tuple[dict[str, Any], str]:
    """Split SKILL.md into its YAML front matter and body."""
    text = skill_md.lstrip("\ufeff")
    if not text.startswith("---"):
        raise InvalidContent("SKILL.md must start with YAML front matter between '---' lines")
    match = re.match(r"^---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", text, re.S)
    if match is None:
        raise InvalidContent("SKILL.md front matter is not closed by a '---' line")
    try:
        data = yaml.load(match.group(1), Loader=FrontMatterLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise InvalidContent(f"SKILL.md front matter is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidContent("SKILL.md front matter must be a YAML mapping")
    return data, text[match.end() :]


def check_front_matter(front: dict[str, Any], skill_name: str) -> dict[str, Any]:
    unknown = sorted(str(k) for k in front if k not in KNOWN_KEYS)
    if unknown:
        raise InvalidContent(
            f"unknown front matter keys {unknown}: allowed are {sorted(KNOWN_KEYS)} (put extras under metadata)"
        )
    name = front.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name) or len(name) > 64:
        raise InvalidContent(
            "front matter 'name' must be 1-64 lowercase letters, digits and single hyphens, "
            "not starting or ending with a hyphen"
        )
    if name != skill_name:
        raise InvalidContent(f"front matter name {name!r} differs from skill_name {skill_name!r}")
    description = front.get("description")
    if not isinstance(description, str) or not 1 <= len(description.strip()) <= 1024:
        raise InvalidContent("front matter 'description' must be 1-1024 characters")
    compatibility = front.get("compatibility")
    if compatibility is not None and not (
        (isinstance(compatibility, str) and len(compatibility) <= 500) or isinstance(compatibility, dict)
    ):
        raise InvalidContent(
            "front matter 'compatibility' must be a string of at most 500 characters or a mapping"
        )
    if "license" in front and not isinstance(front["license"], str):
        raise InvalidContent("front matter 'license' must be a string")
    metadata = front.get("metadata")
    if metadata is not None and (
        not isinstance(metadata, dict) or not all(isinstance(k, str) for k in metadata)
    ):
        raise InvalidContent("front matter 'metadata' must be a mapping with string keys")
    tools = front.get("allowed-tools")
    if tools is not None and not (
        isinstance(tools, str) or (isinstance(tools, list) and all(isinstance(t, str) for t in tools))
    ):
        raise InvalidContent(
            "front matter 'allowed-tools' must be a list of strings or a space-separated string"
        )
    # JSON round trip (dates in YAML become strings, at any depth) so the stored copy equals what clients see;
    # a value JSON cannot carry (!!binary bytes, .nan, .inf) is the client's error, never a 500 (finding N11)
    try:
        stored: dict[str, Any] = json.loads(json.dumps(front, allow_nan=False, default=_date_text))
    except (TypeError, ValueError) as exc:
        raise InvalidContent(f"front matter holds a value JSON cannot carry: {exc}") from None
    return stored


def _date_text(value: Any) -> str:
    if isinstance(value, date | datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not allowed")


def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidContent(f"{what} is not valid UTF-8 text (lone surrogate)") from None


def check_skill(
    skill_name: str, skill_md: str, files: dict[str, str | Base64File], limits: LimitSettings
) -> tuple[dict[str, Any], bytes, list[ValidFile]]:
    """Validate a whole skill version; returns (front matter, SKILL.md bytes, files sorted by path)."""
    try:
        check_skill_name(skill_name)
    except InvalidPath as exc:
        raise InvalidContent(str(exc)) from None
    md_bytes = _utf8(skill_md, "SKILL.md")
    if len(md_bytes) > limits.max_skill_md_bytes:
        raise InvalidContent(f"SKILL.md is {len(md_bytes)} bytes; the limit is {limits.max_skill_md_bytes}")
    front, _ = parse_front_matter(skill_md)
    front = check_front_matter(front, skill_name)
    if len(files) > limits.max_skill_files:
        raise InvalidContent(f"{len(files)} files; the limit is {limits.max_skill_files}")
    out: list[ValidFile] = []
    total = 0
    for path, value in sorted(files.items()):
        try:
            check_path(path)
        except InvalidPath as exc:
            raise InvalidContent(str(exc)) from None
        if path in RESERVED:
            raise InvalidContent(f"{path!r} is reserved: SKILL.md goes in skill_md, index.json is generated")
        if isinstance(value, Base64File):
            try:
                data = base64.b64decode(value.base64, validate=True)
            except (binascii.Error, ValueError):
                raise InvalidContent(f"file {path!r}: 'base64' is not valid base64") from None
        else:
            data = _utf8(value, f"file {path!r}")
        if len(data) > limits.max_skill_file_bytes:
            raise InvalidContent(
                f"file {path!r} is {len(data)} bytes; the limit is {limits.max_skill_file_bytes}"
            )
        total += len(data)
        out.append(ValidFile(path, data))
    if total > limits.max_skill_total_bytes:
        raise InvalidContent(f"files total {total} bytes; the limit is {limits.max_skill_total_bytes}")
    return front, md_bytes, out
