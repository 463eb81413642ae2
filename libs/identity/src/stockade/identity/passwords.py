"""Password hashing: argon2id (argon2-cffi) for new hashes; older scrypt hashes still verify and are upgraded.

Formats: ``$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`` (PHC string; the parameters are OWASP's argon2id
minimum: 19 MiB, two passes, one lane), and the earlier ``scrypt$n$r$p$salt$hash``. :func:`needs_rehash` is true
for a scrypt hash, or an argon2 hash made with other parameters: the caller stores a fresh hash after a
successful sign-in (``stockade.identity.sessions.verify_credentials`` does).

Hashing costs tens of milliseconds of CPU by design, so async callers use :func:`hash_in_worker` and
:func:`verify_in_worker`: the work runs on a small thread pool of its own (argon2-cffi releases the GIL), never
on the event loop, and at most ``HASH_WORKERS`` hashes run at once (CPU and memory stay bounded under a flood of
sign-ins; the rest wait in the pool's queue).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
from concurrent.futures import ThreadPoolExecutor

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

MIN_PASSWORD_LENGTH = 8  # every way a password is set (user create, set-password, the console) checks it

HASH_WORKERS = 2
_HASHER = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)
_POOL = ThreadPoolExecutor(max_workers=HASH_WORKERS, thread_name_prefix="password-hash")


def hash_password(password: str) -> str:
    """An argon2id hash of ``password`` (blocking: tens of milliseconds)."""
    return _HASHER.hash(password)


def verify_password(password: str, stored: str | None) -> bool:
    """True when ``password`` matches ``stored`` (argon2 or the earlier scrypt format); False for anything else."""
    if not stored:
        return False
    if stored.startswith("$argon2"):
        try:
            return _HASHER.verify(stored, password)
        except (VerificationError, InvalidHashError):
            return False
    return _verify_scrypt(password, stored)


def needs_rehash(stored: str) -> bool:
    """True for a hash that is not argon2id with the current parameters (scrypt, or older argon2 settings)."""
    if not stored.startswith("$argon2"):
        return True
    try:
        return _HASHER.check_needs_rehash(stored)
    except InvalidHashError:
        return True


async def hash_in_worker(password: str) -> str:
    """:func:`hash_password` on the hashing pool (the event loop keeps serving)."""
    return await asyncio.get_running_loop().run_in_executor(_POOL, hash_password, password)


async def verify_in_worker(password: str, stored: str | None) -> bool:
    """:func:`verify_password` on the hashing pool (the event loop keeps serving)."""
    return await asyncio.get_running_loop().run_in_executor(_POOL, verify_password, password, stored)


def _verify_scrypt(password: str, stored: str) -> bool:
    try:
        kind, n, r, p, salt, digest = stored.split("$")
        if kind != "scrypt":
            return False
        computed = hashlib.scrypt(
            password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p), dklen=32
        )
    except ValueError:
        return False
    return hmac.compare_digest(computed, base64.b64decode(digest))
