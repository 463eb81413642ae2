"""``stockade up``'s state directory and database are its owner's only, whatever the umask (finding L8)."""

import os
import stat

from stockade.cli.stack import StackConfig
from stockade.cli.up import prepare_state_dir


def test_state_dir_and_database_are_private(tmp_path):
    cfg = StackConfig(state_dir=tmp_path / "state", host="127.0.0.1")
    old = os.umask(0o022)
    try:
        prepare_state_dir(cfg)
        (tmp_path / "state").chmod(0o755)  # a directory left open by an earlier version is closed again
        cfg.db_path.chmod(0o644)
        prepare_state_dir(cfg)
    finally:
        os.umask(old)
    assert stat.S_IMODE(cfg.state_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(cfg.db_path.stat().st_mode) == 0o600
