"""Demo data for the embedded stack (``stockade up``): created once, on an empty database."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from stockade.identity import apikeys, directory, platform
from stockade.identity.models import OrganisationPublic, UserPublic
from stockade.identity.tables import APPROVER_TAG, Deployment, Flow, Organisation, Scope
from stockade.runtime.uow import UnitOfWork

DEMO_ORGANISATION = "demo"
DEMO_USER = "demo@stockade.local"
DEMO_PROJECT = "demo"
DEMO_REVIEW_PROJECT = "demo-reviewed"


@dataclass(frozen=True)
class DemoSeed:
    organisation: OrganisationPublic
    project_id: str
    user: UserPublic
    api_key_plaintext: str
    review_project_id: str = ""
    console_password: str = ""
    ingest_key_plaintext: str = ""  # a per-project ingest key of the demo project (guardrail-ingest)


async def seed_demo(session_factory: async_sessionmaker[AsyncSession]) -> DemoSeed | None:
    """Create the demo organisation, projects, user, write key and ingest key; None if any organisation exists already."""
    async with UnitOfWork(session_factory) as uow:  # all of it or nothing
        session = uow.session
        if (await session.execute(select(Organisation.id).limit(1))).first() is not None:
            return None
        org = await directory.create_organisation(session, DEMO_ORGANISATION)
        console_password = secrets.token_urlsafe(12)  # random per database; shown by stockade up
        user = await directory.create_user(session, DEMO_USER, password=console_password)
        project = await directory.create_project(session, org.id, DEMO_PROJECT, Flow.DIRECT.value)
        reviewed = await directory.create_project(
            session, org.id, DEMO_REVIEW_PROJECT, Flow.MANUAL_REVIEW.value
        )
        for proj in (project, reviewed):
            await directory.add_project_member(session, proj.id, user.id)
            await directory.grant_tag(session, proj.id, user.id, APPROVER_TAG)
        await platform.grant_platform_admin(session, user.id)  # the demo's one user runs the platform
        key = await apikeys.create_api_key(
            session, user.id, scope=Scope.WRITE.value, deployment=Deployment.ONPREM.value
        )
        ingest_key = await apikeys.create_api_key(
            session, user.id, scope=Scope.INGEST.value, project=project.id
        )
    return DemoSeed(
        organisation=org,
        project_id=project.id,
        user=user,
        api_key_plaintext=key.key,
        review_project_id=reviewed.id,
        console_password=console_password,
        ingest_key_plaintext=ingest_key.key,
    )
