"""Health probe for containers and scripts.

    python -m stockade.runtime.probe http://127.0.0.1:8101/healthz
    python -m stockade.runtime.probe nats://nats:4222 --subject trust.cmd.health.v1 \
        --user trust-broker --password-env TRUST_BROKER_NATS__PASSWORD

Exit code 0 when healthy, 1 otherwise (with the reason on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import urllib.error
import urllib.request


def probe_http(url: str, timeout: float) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - operator-given URL
        body: str = resp.read().decode()
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}: {body[:200]}")
        return body


async def probe_nats(url: str, subject: str, timeout_s: float, user: str | None, password: str | None) -> str:
    from stockade.runtime.nats import probe_connect

    nc = await probe_connect(url, timeout_s=timeout_s, user=user, password=password)
    try:
        msg = await nc.request(subject, b"{}", timeout=timeout_s)
        answer = json.loads(msg.data)
        if answer.get("status") != "ok":
            raise RuntimeError(f"unhealthy answer: {answer}")
        return msg.data.decode()
    finally:
        await nc.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m stockade.runtime.probe", description=__doc__.split("\n")[0]
    )
    parser.add_argument("url")
    parser.add_argument("--subject", help="NATS request subject (for nats:// URLs)")
    parser.add_argument("--timeout", type=float, default=3.0)
    parser.add_argument("--user")
    secret = parser.add_mutually_exclusive_group()
    secret.add_argument("--password", help="prefer --password-env: argv is visible in the process list")
    secret.add_argument("--password-env", metavar="NAME", help="read the NATS password from this variable")
    args = parser.parse_args(argv)
    if args.password_env:
        args.password = os.environ.get(args.password_env) or None
    try:
        if args.url.startswith(("http://", "https://")):
            out = probe_http(args.url, args.timeout)
        elif args.url.startswith(("nats://", "tls://")):
            if not args.subject:
                parser.error("--subject is required for a nats:// URL")
            out = asyncio.run(probe_nats(args.url, args.subject, args.timeout, args.user, args.password))
        else:
            parser.error("URL must start with http://, https:// or nats://")
    except (OSError, urllib.error.URLError, RuntimeError, TimeoutError, ValueError) as exc:
        print(f"unhealthy: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # nats errors have no common base
        print(f"unhealthy: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
