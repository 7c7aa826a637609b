"""`chronicle users` and `chronicle tokens` as a person uses them: a token shown once and
never again, mistakes answered with what to do; an admin made only with the owner's login."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.support.cli import chronicle, cli_environment


def test_users_and_tokens_from_the_command_line(
    app_database_url: str, database_url: str, tmp_path: Path
) -> None:
    env = cli_environment(app_database_url, tmp_path)
    env["CHRONICLE_OWNER_DATABASE_URL"] = database_url
    added = chronicle("users", "add", "hana", "--admin", env=env)
    assert added.returncode == 0 and "added admin hana" in added.stdout
    again = chronicle("users", "add", "hana", env=env)
    assert again.returncode == 1 and "exists already" in again.stderr
    bad = chronicle("users", "add", "two words", env=env)
    assert bad.returncode == 1 and "not a user name" in bad.stderr
    users = chronicle("users", "list", env=env).stdout
    assert "hana" in users and "admin" in users

    made = chronicle("tokens", "create", "hana", "--expires", "30d", "--label", "ci", env=env)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert token.startswith("chr_") and "\n" not in token  # stdout is the token alone
    assert "shown only now" in made.stderr
    listed = chronicle("tokens", "list", env=env).stdout
    assert token not in listed and token[4:] not in listed
    line = next(line for line in listed.splitlines() if "hana" in line)
    assert "live" in line and "ci" in line

    nobody = chronicle("tokens", "create", "nobody", env=env)
    assert nobody.returncode == 1 and "chronicle users add nobody" in nobody.stderr
    never = chronicle("tokens", "create", "hana", "--expires", "soon", env=env)
    assert never.returncode == 2 and "30d" in never.stderr

    token_id = line.split()[0]
    assert chronicle("tokens", "revoke", token_id, env=env).returncode == 0
    assert "revoked" in chronicle("tokens", "list", env=env).stdout
    twice = chronicle("tokens", "revoke", token_id, env=env)
    assert twice.returncode == 1 and "no live token" in twice.stderr
    unknown = chronicle("tokens", "revoke", str(uuid.uuid4()), env=env)
    assert unknown.returncode == 1


def test_the_applications_login_alone_makes_no_admin(
    app_database_url: str, database_url: str, tmp_path: Path
) -> None:
    """Whoever holds only the application's database URL (the server's) cannot make an admin
    or an admin's token; the owner's URL can."""
    app_only = cli_environment(app_database_url, tmp_path)
    refused = chronicle("users", "add", "mallory", "--admin", env=app_only)
    assert refused.returncode == 1, refused.stdout
    assert "owner's login may make mallory an admin" in refused.stderr
    assert "CHRONICLE_OWNER_DATABASE_URL" in refused.stderr and "Traceback" not in refused.stderr
    assert "mallory" not in chronicle("users", "list", env=app_only).stdout

    owner = {**app_only, "CHRONICLE_OWNER_DATABASE_URL": database_url}
    assert chronicle("users", "add", "root", "--admin", env=owner).returncode == 0
    app_only["CHRONICLE_OWNER_DATABASE_URL"] = app_database_url  # named, but not the owner's
    forged = chronicle("tokens", "create", "root", env=app_only)
    assert forged.returncode == 1 and "token for an admin" in forged.stderr
    assert forged.stdout == ""
    made = chronicle("tokens", "create", "root", env=owner)
    assert made.returncode == 0 and made.stdout.startswith("chr_")


def test_replace_revokes_the_users_live_tokens_of_the_same_label(
    app_database_url: str, database_url: str, tmp_path: Path
) -> None:
    """What ./dev up does on each start: one token of its label stays live, not one a start."""
    env = cli_environment(app_database_url, tmp_path)
    env["CHRONICLE_OWNER_DATABASE_URL"] = database_url
    for name in ("ivo", "jan"):
        assert chronicle("users", "add", name, env=env).returncode == 0
    kept = chronicle("tokens", "create", "ivo", "--label", "ci", env=env)
    theirs = chronicle("tokens", "create", "jan", "--label", "./dev up", env=env)
    first = chronicle("tokens", "create", "ivo", "--label", "./dev up", env=env)
    second = chronicle("tokens", "create", "ivo", "--label", "./dev up", "--replace", env=env)
    assert all(made.returncode == 0 for made in (kept, theirs, first, second))
    assert "revoked token" in second.stderr

    def states() -> list[tuple[str, str, str]]:
        listed = chronicle("tokens", "list", env=env).stdout.splitlines()
        return [(f[1], f[2], line.rsplit("  ", 1)[-1]) for line in listed if (f := line.split())]

    assert sorted(states()) == sorted(
        [("ivo", "live", "ci"), ("jan", "live", "./dev up"), ("ivo", "revoked", "./dev up"),
         ("ivo", "live", "./dev up")]
    )  # fmt: skip
    audit = chronicle("audit", "log", env=env)
    assert audit.returncode == 0, audit.stderr
    assert len([line for line in audit.stdout.splitlines() if "revoked" in line]) == 1, audit.stdout
    no_label = chronicle("tokens", "create", "ivo", "--replace", env=env)
    assert no_label.returncode == 2 and "--label" in no_label.stderr
