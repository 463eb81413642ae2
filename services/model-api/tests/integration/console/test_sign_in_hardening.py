"""The console's sign-in rate limit holds under concurrent attempts (each is counted before its password is
checked), and a password stored as scrypt signs in and is upgraded to argon2id."""

import asyncio
import base64
import hashlib

from sqlalchemy import select

from stockade.identity.tables import User

PASSWORD = "correct horse battery staple"  # the console fixture's user


async def test_concurrent_wrong_passwords_get_no_more_tries_than_the_limit(console, anonymous):
    limit = console.settings.sign_in.max_failures_per_email  # 3 in these tests
    attempts = 12
    answers = await asyncio.gather(
        *(
            anonymous.post("/login", data={"email": console.email, "password": f"guess {i}"})
            for i in range(attempts)
        )
    )
    statuses = sorted(r.status_code for r in answers)
    checked = statuses.count(401)  # attempts whose password was checked
    assert 1 <= checked <= limit, statuses
    assert statuses.count(429) == attempts - checked
    assert all(r.headers["retry-after"].isdigit() for r in answers if r.status_code == 429)
    # Under contention an attempt may be refused while others hold the slots; one at a time, the rest of the
    # budget fills exactly, and then even the right password waits.
    for _ in range(limit - checked):
        wrong = await anonymous.post("/login", data={"email": console.email, "password": "one more guess"})
        assert wrong.status_code == 401
    locked = await anonymous.post("/login", data={"email": console.email, "password": PASSWORD})
    assert locked.status_code == 429


async def test_a_scrypt_password_signs_in_and_is_stored_as_argon2id(console, anonymous):
    salt = b"0123456789abcdef"
    digest = hashlib.scrypt(PASSWORD.encode(), salt=salt, n=2**14, r=8, p=1, dklen=32)
    legacy = f"scrypt${2**14}$8$1${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"
    async with console.sessions() as s:
        row = (await s.execute(select(User).where(User.email == console.email))).scalar_one()
        row.password_hash = legacy
        await s.commit()
    signed_in = await anonymous.post("/login", data={"email": console.email, "password": PASSWORD})
    assert signed_in.status_code == 303
    async with console.sessions() as s:
        stored = (await s.execute(select(User.password_hash).where(User.email == console.email))).scalar_one()
    assert stored.startswith("$argon2id$")
