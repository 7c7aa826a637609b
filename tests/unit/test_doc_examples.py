"""Every shell example of the documentation either runs (tests/system/docs/) or says, in a
visible marker, why it cannot run here; and the examples are read as a reader reads them."""

from __future__ import annotations

from pathlib import Path

from tests.support.doc_examples import (
    Block,
    Placeholders,
    blocks,
    documented_pages,
    match_output,
    missing_output,
)


def test_every_block_not_run_says_why() -> None:
    found = [block for page in documented_pages() for block in blocks(page)]
    assert len(found) > 20
    not_run = {block.where: block.reason for block in found if block.marker == "not-run"}
    print("shell examples not run:", *(f"{where}: {why}" for where, why in not_run.items()),
          sep="\n  ")  # fmt: skip
    assert [where for where, why in not_run.items() if not why] == []
    assert any(block.runs_here for block in found)


def test_a_marker_without_a_reason_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "<!-- not-run: needs a real key -->\n```sh\nchronicle run x\n```\n\n"
        "<!-- not-run -->\n```bash\nchronicle demo\n```\n\n"
        "```python\nprint()\n```\n"
        "<!-- example-transcript -->\n```console\n$ chronicle eval run s.yaml\n```\n"
        "```console\n$ chronicle demo\n```\n",
        encoding="utf-8",
    )
    found = blocks(page)
    assert [(b.page, b.line, b.marker, b.reason, b.runs_here) for b in found] == [
        ("docs/page.md", 2, "not-run", "needs a real key", False),
        ("docs/page.md", 7, "not-run", "", False),
        ("docs/page.md", 15, "example-transcript", "", False),
        ("docs/page.md", 18, None, None, True),
    ]


def test_commands_and_their_shown_output() -> None:
    (block,) = [
        b
        for b in blocks_of(
            "```console\n"
            "$ curl -s -H 'a: b' \\\n       -d '{}' http://127.0.0.1:8000/api/sessions\n"
            '{"id":"764913d8-…","user":"admin"}\n'
            "$ chronicle replay 32f9df4a-3498-4763-b01d-2d3704ffcb29 --system-prompt p.txt\n"
            "[exit 3]\n"
            "$ ./dev chronicle verify SESSION\n"
            "ok: 8 events, hash chain intact\n"
            "$ curl -d '{\n    \"a\": 1}' URL\n"
            '{"ok": true}\n'
            "```\n"
        )
    ]
    commands = block.commands()
    assert [(c.text, c.status, c.shown) for c in commands] == [
        ("curl -s -H 'a: b' -d '{}' http://127.0.0.1:8000/api/sessions", 0,
         ['{"id":"764913d8-…","user":"admin"}']),
        ("chronicle replay 32f9df4a-3498-4763-b01d-2d3704ffcb29 --system-prompt p.txt", 3, []),
        ("./dev chronicle verify SESSION", 0, ["ok: 8 events, hash chain intact"]),
        ("curl -d '{\n    \"a\": 1}' URL", 0, ['{"ok": true}']),
    ]  # fmt: skip
    fill = Placeholders(url="http://127.0.0.1:4321", token="chr_x", session="S-ID")
    assert [fill.fill(c.text) for c in commands] == [
        "curl -s -H 'a: b' -d '{}' http://127.0.0.1:4321/api/sessions",
        "chronicle replay S-ID --system-prompt p.txt",
        "chronicle verify S-ID",
        "curl -d '{\n    \"a\": 1}' URL",
    ]
    assert fill.fill("curl $URL/api/sessions/$SESSION/events") == (
        "curl $URL/api/sessions/$SESSION/events"
    )


def test_sh_blocks_drop_comments_and_join_lines() -> None:
    (block,) = blocks_of(
        "```sh\n# a comment\nchronicle sql \"SELECT '#1'\"   # the analyst's table\n"
        "CHRONICLE_X=1 \\\n    chronicle users add ann --admin   # the owner\n```\n"
    )
    assert [c.text for c in block.commands()] == [
        "chronicle sql \"SELECT '#1'\"",
        "CHRONICLE_X=1 chronicle users add ann --admin",
    ]


def test_shown_output_is_found_in_order() -> None:
    output = 'x\n{"id":"abc","user":"admin"}\nreplay r of s (strict): 2 of 2 matched\n'
    assert missing_output(['{"id":"…","user":"admin"}', "replay ... (strict): …"], output) is None
    assert missing_output(["replay …", '{"id":"…"…}'], output) == '{"id":"…"…}'
    assert missing_output(['{"id":"…","user":"lena"}'], output) == '{"id":"…","user":"lena"}'


def test_an_id_an_example_printed_stands_for_the_real_one() -> None:
    shown = [
        '{"id":"5b0e62a1-…","user":"admin"}',
        "session c6ed8968-a05b-4f79-9c11-d8d4dd11cf8e ok",
    ]
    real = "11111111-2222-3333-4444-555555555555"
    other = "66666666-7777-8888-9999-000000000000"
    output = f'{{"id":"{real}","user":"admin"}}\nsession {other} ok\n'
    missing, printed = match_output(shown, output)
    assert missing is None
    assert printed == {"5b0e62a1-…": real, "c6ed8968-a05b-4f79-9c11-d8d4dd11cf8e": other}
    fill = Placeholders(url="u", token="t", session="S", printed=printed)
    assert fill.fill("curl /api/sessions/5b0e62a1-…/replay-result") == (
        f"curl /api/sessions/{real}/replay-result"
    )
    assert fill.fill("chronicle verify 12345678-…") == "chronicle verify S"


def blocks_of(text: str) -> list[Block]:
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        (Path(directory) / "docs").mkdir()
        page = Path(directory) / "docs" / "page.md"
        page.write_text(text, encoding="utf-8")
        return blocks(page)
