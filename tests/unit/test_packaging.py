"""The distribution holds every package: pyproject.toml lists them by name (a directory mapped
into the package, like migrations/ and runtime_image/, rules out automatic discovery), so a
new package under app/ or a mapped directory must be added there."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.support.repository import ROOT


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _packages_in(directory: Path, name: str) -> set[str]:
    return {
        ".".join([name, *init.parent.relative_to(directory).parts])
        for init in directory.rglob("__init__.py")
        if "__pycache__" not in init.parts
    }


def test_every_package_is_listed_for_the_distribution() -> None:
    config = _setuptools()
    listed = set(config["packages"])
    found = _packages_in(ROOT / "app", "app")
    for name, directory in config["package-dir"].items():
        found |= _packages_in(ROOT / directory, name)
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"
    # The others are directories of data files (the web page, the migrations' versions):
    # setuptools warns about an importable directory left out of the list.
    missing = [name for name in listed - found if not _directory_of(name, config).is_dir()]
    assert missing == [], f"listed but not there: {sorted(missing)}"


def _directory_of(package: str, config: dict) -> Path:
    """Where ``package`` lives in the checkout (through ``package-dir`` for mapped ones)."""
    for name, directory in config["package-dir"].items():
        if package.startswith(name + "."):
            return ROOT / directory / Path(*package.removeprefix(name + ".").split("."))
    return ROOT / Path(*package.split("."))


def test_the_mapped_directories_are_the_ones_the_code_looks_up() -> None:
    assert _setuptools()["package-dir"] == {
        "app.migrations": "migrations",
        "app.runtime_image": "runtime_image",
    }


def test_the_web_page_files_are_package_data() -> None:
    """`chronicle serve` from a wheel serves the page: every file of app/server/web/ is
    matched by a package-data pattern of ``app.server.web`` (a new kind of file needs one)."""
    patterns = _setuptools()["package-data"]["app.server.web"]
    web = ROOT / "app" / "server" / "web"
    files = [p.relative_to(web) for p in web.iterdir() if p.is_file()]
    assert {"index.html", "main.js", "style.css"} <= {p.name for p in files}
    unmatched = [str(p) for p in files if not any(p.match(pattern) for pattern in patterns)]
    assert unmatched == [], f"add to [tool.setuptools.package-data] app.server.web: {unmatched}"
