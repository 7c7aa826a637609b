"""The store's surface (docs/architecture.md, "The store's surface and the features' tables"):
every name ``app.store`` and ``app.store.integrity`` list loads from the module they say, and
what a feature's ``sql/`` module needs of the store is there."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("package", ["app.store", "app.store.integrity"])
def test_every_listed_name_loads(package: str) -> None:
    module = importlib.import_module(package)
    homes = module._EXPORTED_FROM
    assert sorted(module.__all__) == sorted(homes)
    for name, home in homes.items():
        assert getattr(module, name) is getattr(importlib.import_module(home), name), name


def test_an_unknown_name_is_an_attribute_error() -> None:
    store = importlib.import_module("app.store")
    with pytest.raises(AttributeError, match="no attribute 'session_leases'"):
        store.session_leases  # noqa: B018 (a feature's table is not the store's)


def test_a_features_query_catches_the_drivers_own_errors() -> None:
    import asyncpg

    import app.store as store

    assert store.UniqueViolationError is asyncpg.UniqueViolationError
    assert store.DatabaseError is asyncpg.PostgresError
    assert issubclass(store.ForeignKeyViolationError, store.DatabaseError)
