"""The user's prompt-api key, kept only in the browser, sealed to the console session.

The console acts on prompt-api with the signed-in user's own API key, so prompt-api alone decides (scope,
membership, approver tag). The key is never stored on the server: it travels in an ``HttpOnly``,
``SameSite=Strict`` cookie, encrypted and authenticated with AES-256-GCM under a key derived from the session
token (HMAC-SHA256(token, "prompt-api-key")). The server keeps only the token's SHA-256, so a copy of the
database opens nothing; once the session ends (sign-out, expiry) the cookie opens nothing either, and a cookie
moved to another session fails to open.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

_CONTEXT = b"prompt-api-key"
_NONCE_BYTES = 12
MAX_KEY_CHARS = 200


def _aead(session_token: str) -> AESGCM:
    return AESGCM(hmac.new(session_token.encode(), _CONTEXT, hashlib.sha256).digest())


def seal(session_token: str, api_key: str) -> str:
    nonce = os.urandom(_NONCE_BYTES)
    sealed = _aead(session_token).encrypt(nonce, api_key.encode(), _CONTEXT)
    return base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("=")


def open_sealed(session_token: str, cookie: str | None) -> str | None:
    """The key, or None for a missing, tampered or other session's cookie."""
    if not cookie or len(cookie) > 4 * MAX_KEY_CHARS:
        return None
    try:
        raw = base64.urlsafe_b64decode(cookie + "=" * (-len(cookie) % 4))
        plain = _aead(session_token).decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], _CONTEXT)
        return plain.decode()
    except (InvalidTag, ValueError, binascii.Error, UnicodeDecodeError):
        return None
