"""The browser console: sign-in, the server-rendered pages and what only they need (cookies, the run reads
through guardrail-ingest, the prompt pages' calls to prompt-api). It changes the catalogue only through
``stockade.model_api.catalogue.actions``."""
