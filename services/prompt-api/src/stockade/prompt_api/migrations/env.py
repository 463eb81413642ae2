from alembic import context

from stockade.runtime.migrations import run_env

run_env(context)
