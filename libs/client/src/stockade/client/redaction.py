"""Keep the key out of httpx's own log lines.

The spec makes the prompt read endpoint take the key as the ``api_key`` query parameter (the only call that
does; every other call sends the X-API-Key header), and httpx logs request URLs at INFO. This filter, installed
on the ``httpx`` logger, masks the parameter's value in those records.
"""

from __future__ import annotations

import logging
import re

_API_KEY_PARAM = re.compile(r"(api_key=)[^&\s\"']+")


class RedactApiKeyFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "api_key=" in message:
            record.msg = _API_KEY_PARAM.sub(r"\1[REDACTED]", message)
            record.args = None
        return True


def install_httpx_log_redaction() -> None:
    """Idempotent: add the filter to the ``httpx`` logger once."""
    logger = logging.getLogger("httpx")
    if not any(isinstance(f, RedactApiKeyFilter) for f in logger.filters):
        logger.addFilter(RedactApiKeyFilter())
