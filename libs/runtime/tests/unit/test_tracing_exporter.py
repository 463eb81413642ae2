"""Exporting spans is off by default and turned on by the standard OTEL_* variables (a fresh process each: the
tracer provider is installed once per process)."""

from __future__ import annotations

import os
import subprocess
import sys

TRACE_ID = "8bf92f3577b34da6a3ce929d0e0e4736"
SCRIPT = f"""
from opentelemetry import trace
from stockade.runtime import tracing
tracing.configure_tracing("probe")
with tracing.consumer_span("probe.handle", {{"traceparent": "00-{TRACE_ID}-b7ad6b7169203331-01"}}) as span:
    print("recording", span.is_recording(), "exporting", tracing._exporting)
    print("injected", tracing.inject({{}})["traceparent"])
provider = trace.get_tracer_provider()
if hasattr(provider, "shutdown"):
    provider.shutdown()  # flushes the batch processor
"""


def _run(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env={**clean, **env}, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_no_exporter_by_default_and_the_trace_goes_on() -> None:
    out = _run()
    assert "recording False exporting False" in out
    assert f"injected 00-{TRACE_ID}-" in out and out.strip().endswith("-01")
    assert '"trace_id"' not in out  # nothing exported


def test_the_console_exporter_exports_the_span_with_the_callers_trace_id() -> None:
    out = _run(OTEL_TRACES_EXPORTER="console", OTEL_SERVICE_NAME="probe-svc")
    assert "recording True exporting True" in out
    assert f'"trace_id": "0x{TRACE_ID}"' in out and '"name": "probe.handle"' in out
    assert '"service.name": "probe-svc"' in out


def test_sdk_disabled_passes_the_callers_context_through_unchanged() -> None:
    out = _run(OTEL_SDK_DISABLED="true")
    assert "recording False" in out and f"injected 00-{TRACE_ID}-b7ad6b7169203331-01" in out
