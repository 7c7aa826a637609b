"""An API client may name a workspace only inside a configured root, links resolved."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.server.creation import allowed_workspace
from app.server.problems import Unprocessable


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "repos"
    (path / "project").mkdir(parents=True)
    return path


def test_a_directory_inside_a_root_is_taken_as_its_real_path(root: Path) -> None:
    assert allowed_workspace(str(root / "project"), [root]) == (root / "project").resolve()
    assert (
        allowed_workspace(str(root / "project" / ".." / "project"), [root])
        == (root / "project").resolve()
    )


def test_without_roots_no_existing_directory_is_taken(root: Path) -> None:
    with pytest.raises(Unprocessable, match="no workspace_roots"):
        allowed_workspace(str(root / "project"), [])


@pytest.mark.parametrize("outside", ["/etc", "/", "/root"])
def test_a_directory_outside_every_root_is_refused(root: Path, outside: str) -> None:
    with pytest.raises(Unprocessable, match="outside the configured workspace roots"):
        allowed_workspace(outside, [root])


def test_dot_dot_cannot_climb_out_of_a_root(root: Path) -> None:
    with pytest.raises(Unprocessable, match="outside"):
        allowed_workspace(str(root / "project" / ".." / ".."), [root])


def test_a_sibling_whose_name_starts_like_the_root_is_outside(root: Path) -> None:
    sibling = root.parent / (root.name + "-evil")
    sibling.mkdir()
    with pytest.raises(Unprocessable, match="outside"):
        allowed_workspace(str(sibling), [root])


def test_a_link_inside_a_root_that_leads_out_of_it_is_refused(root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "link").symlink_to(elsewhere)
    with pytest.raises(Unprocessable, match="outside"):
        allowed_workspace(str(root / "link"), [root])


def test_a_relative_path_or_a_missing_directory_is_refused(root: Path) -> None:
    with pytest.raises(Unprocessable, match="absolute"):
        allowed_workspace("project", [root])
    with pytest.raises(Unprocessable, match="not an existing directory"):
        allowed_workspace(str(root / "missing"), [root])
