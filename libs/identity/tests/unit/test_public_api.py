import inspect

import stockade.identity as identity


def test_all_names_are_exported_and_exist():
    for name in identity.__all__:
        assert hasattr(identity, name), name
    public = {
        n for n in dir(identity) if not n.startswith("_") and not inspect.ismodule(getattr(identity, n))
    }
    assert public == set(identity.__all__)


def test_errors_share_one_base():
    for err in (identity.NotFoundError, identity.ConflictError, identity.InvalidInputError):
        assert issubclass(err, identity.IdentityError)
