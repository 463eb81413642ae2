"""model-api's exception hierarchy is exported through __all__ and shares one base."""

import inspect

from stockade.model_api import errors


def test_errors_are_exported_and_share_one_base():
    defined = {n for n, v in vars(errors).items() if inspect.isclass(v) and issubclass(v, Exception)}
    assert defined == set(errors.__all__)
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.CatalogueError)
