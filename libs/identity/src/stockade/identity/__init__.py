"""Organisations, users, projects, memberships, approver tags and API keys (tables, migrations, permissions)."""

from stockade.identity.access import (
    Decision,
    KeyPrincipal,
    ProjectAccess,
    authenticate,
    can_list,
    can_publish,
    can_write,
    effective_scope,
    project_access,
)
from stockade.identity.apikeys import create_api_key, list_api_keys, revoke_api_key
from stockade.identity.directory import (
    add_organisation_member,
    add_project_member,
    create_organisation,
    create_project,
    create_user,
    grant_tag,
    remove_organisation_member,
    remove_project_member,
    revoke_tag,
    set_project_flow,
)
from stockade.identity.errors import ConflictError, IdentityError, InvalidInputError, NotFoundError
from stockade.identity.ingest_keys import IngestKeyCheck, verify_ingest_key
from stockade.identity.models import (
    ApiKeyCreated,
    ApiKeyPublic,
    OrganisationPublic,
    ProjectPublic,
    UserPublic,
)
from stockade.identity.platform import (
    grant_platform_admin,
    is_platform_admin,
    list_platform_admins,
    revoke_platform_admin,
)
from stockade.identity.tables import APPROVER_TAG, Deployment, Flow, Scope

__all__ = [
    "APPROVER_TAG",
    "ApiKeyCreated",
    "ApiKeyPublic",
    "ConflictError",
    "Decision",
    "Deployment",
    "Flow",
    "IdentityError",
    "IngestKeyCheck",
    "InvalidInputError",
    "KeyPrincipal",
    "NotFoundError",
    "OrganisationPublic",
    "ProjectAccess",
    "ProjectPublic",
    "Scope",
    "UserPublic",
    "add_organisation_member",
    "add_project_member",
    "authenticate",
    "can_list",
    "can_publish",
    "can_write",
    "create_api_key",
    "create_organisation",
    "create_project",
    "create_user",
    "effective_scope",
    "grant_platform_admin",
    "grant_tag",
    "is_platform_admin",
    "list_api_keys",
    "list_platform_admins",
    "project_access",
    "remove_organisation_member",
    "remove_project_member",
    "revoke_api_key",
    "revoke_platform_admin",
    "revoke_tag",
    "set_project_flow",
    "verify_ingest_key",
]
