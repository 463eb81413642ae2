"""A password stored as scrypt (before argon2) still signs in, and is replaced by an argon2id hash on that
sign-in; a wrong password changes nothing."""

import base64
import hashlib

from sqlalchemy import select

from stockade.identity import create_user
from stockade.identity.sessions import verify_credentials
from stockade.identity.tables import User


def scrypt_hash(password: str) -> str:
    salt = b"fedcba9876543210"
    digest = hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1, dklen=32)
    return f"scrypt${2**14}$8$1${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"


async def _stored(sessions, email: str) -> str:
    async with sessions() as s:
        return (await s.execute(select(User.password_hash).where(User.email == email))).scalar_one()


async def test_a_scrypt_hash_is_upgraded_to_argon2id_on_sign_in(sessions):
    async with sessions() as s:
        user = await create_user(s, "old@example.org")
        row = await s.get(User, user.id)
        row.password_hash = scrypt_hash("correct horse battery")
        await s.commit()
    async with sessions() as s:
        assert await verify_credentials(s, "old@example.org", "wrong password") is None
    assert (await _stored(sessions, "old@example.org")).startswith("scrypt$")
    async with sessions() as s:
        assert (await verify_credentials(s, "old@example.org", "correct horse battery")).id == user.id
    upgraded = await _stored(sessions, "old@example.org")
    assert upgraded.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    async with sessions() as s:
        assert (await verify_credentials(s, "old@example.org", "correct horse battery")).id == user.id
        assert await verify_credentials(s, "old@example.org", "wrong password") is None
    assert await _stored(sessions, "old@example.org") == upgraded  # a current hash is not rewritten


async def test_new_users_get_argon2id(sessions):
    async with sessions() as s:
        await create_user(s, "new@example.org", "correct horse battery")
        await s.commit()
    assert (await _stored(sessions, "new@example.org")).startswith("$argon2id$")
