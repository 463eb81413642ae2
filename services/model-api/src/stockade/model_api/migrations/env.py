from alembic import context

from stockade.identity.migrate import run_env

run_env(context)
