from stockade.identity import Deployment
from stockade.prompt_api.settings import PromptApiSettings


def test_defaults(monkeypatch):
    monkeypatch.delenv("STOCKADE_DEPLOYMENT", raising=False)
    monkeypatch.delenv("PROMPT_API_DEPLOYMENT", raising=False)
    s = PromptApiSettings()
    assert (
        s.http.port == 8101
        and s.deployment is Deployment.ONPREM
        and s.limits.max_body_bytes == 8 * 1024 * 1024
    )


def test_env_prefix_nested_and_deployment_alias(monkeypatch):
    monkeypatch.setenv("PROMPT_API_HTTP__PORT", "9999")
    monkeypatch.setenv("PROMPT_API_LIMITS__MAX_BODY_BYTES", "4096")
    monkeypatch.setenv("STOCKADE_DEPLOYMENT", "hosted")
    s = PromptApiSettings()
    assert s.http.port == 9999 and s.limits.max_body_bytes == 4096 and s.deployment is Deployment.HOSTED
    monkeypatch.setenv("PROMPT_API_DEPLOYMENT", "onprem")
    assert PromptApiSettings().deployment is Deployment.ONPREM


def test_create_app_connects_to_nothing():
    from stockade.prompt_api.main import create_app

    app = create_app(PromptApiSettings(db={"url": "postgresql://nobody@127.0.0.1:1/none"}))
    paths = set(app.openapi()["paths"])
    assert {
        "/prompts/active-prompt-version",
        "/prompts",
        "/skills",
        "/skills/index.json",
        "/skills/active-version",
    } <= paths


def test_public_api_matches_all():
    import inspect

    import stockade.prompt_api as api

    public = {n for n in dir(api) if not n.startswith("_") and not inspect.ismodule(getattr(api, n))}
    assert public == set(api.__all__)
    for err in (api.Forbidden, api.NotFound, api.InvalidContent, api.InvalidPath, api.BodyTooLarge):
        assert issubclass(err, api.PromptApiError)


async def test_the_served_app_freezes_its_startup_heap(tmp_path):
    """The read tail: with ``gc_freeze`` (the default) the startup objects are out of the collector's
    reach once the app has started, so a full collection does not stop every request in flight."""
    import gc

    from stockade.prompt_api.main import create_app
    from stockade.prompt_api.migrate import upgrade_async
    from stockade.prompt_api.settings import OutboxSettings, PromptApiSettings
    from stockade.runtime.settings import DatabaseSettings

    url = f"sqlite+aiosqlite:///{tmp_path / 'p.db'}"
    await upgrade_async(url)
    settings = PromptApiSettings(
        db=DatabaseSettings(url=url), outbox=OutboxSettings(enabled=False), migrate_on_startup=False
    )
    assert settings.gc_freeze
    app = create_app(settings)
    gc.unfreeze()
    try:
        async with app.router.lifespan_context(app):
            assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()
