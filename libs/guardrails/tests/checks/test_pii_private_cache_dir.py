"""The PII check's tldextract cache lives in a directory only this user can write (review finding L8): a shared,
predictable path in the temp dir could be created first by another local user and fed a poisoned suffix list."""

import os
import stat

from stockade.guardrails.checks.pii.engine import private_cache_dir


def test_the_cache_dir_is_private_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    first = private_cache_dir("stockade-test")
    assert first == tmp_path / f"stockade-test-{os.getuid()}"
    assert stat.S_IMODE(first.stat().st_mode) == 0o700
    assert private_cache_dir("stockade-test") == first


def test_a_directory_others_may_write_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    shared = tmp_path / f"stockade-test-{os.getuid()}"
    shared.mkdir()
    shared.chmod(0o777)  # as if someone else had prepared it
    chosen = private_cache_dir("stockade-test")
    assert chosen != shared and chosen.parent == tmp_path
    assert stat.S_IMODE(chosen.stat().st_mode) == 0o700
    link = tmp_path / f"stockade-link-{os.getuid()}"
    link.symlink_to(shared)  # a link planted under the expected name is not followed
    assert private_cache_dir("stockade-link") != link
