import subprocess
import sys


def test_probe_import_does_not_pull_the_web_stack():
    code = "import sys, stockade.runtime.probe; print(sorted(m for m in ('fastapi','sqlalchemy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
