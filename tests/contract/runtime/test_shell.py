"""The persistent shell through a real runtime."""

from __future__ import annotations

import time

from app.events import ErrorObservation, Run, RunOutput
from app.runtime import Runtime


async def run(runtime: Runtime, command: str, **fields: object) -> RunOutput:
    observation = await runtime.execute(Run(command=command, **fields))
    assert isinstance(observation, RunOutput), observation
    return observation


async def test_pwd_in_the_workspace(runtime: Runtime, inside: str) -> None:
    result = await run(runtime, "pwd", timeout=30)
    assert result.output.strip() == inside
    assert result.exit_code == 0 and not result.timed_out


async def test_state_persists_between_commands(runtime: Runtime) -> None:
    await run(runtime, "mkdir -p sub && cd sub && export GREETING=hello")
    result = await run(runtime, 'echo "$GREETING from $(basename "$PWD")"')
    assert result.output == "hello from sub\n"


async def test_virtualenv_activation_persists(runtime: Runtime) -> None:
    created = await run(runtime, "python3 -m venv --without-pip venv", timeout=60)
    assert created.exit_code == 0, created.output
    await run(runtime, "source venv/bin/activate")
    result = await run(runtime, "which python; echo $VIRTUAL_ENV")
    assert "venv/bin/python" in result.output and "venv" in result.output.splitlines()[1]


async def test_exit_code_and_merged_output_in_order(runtime: Runtime) -> None:
    result = await run(
        runtime, "echo one; echo two >&2; echo three; exit_with() { return $1; }; exit_with 7"
    )
    assert result.output == "one\ntwo\nthree\n"
    assert result.exit_code == 7


async def test_multi_line_command_is_one_command(runtime: Runtime) -> None:
    result = await run(runtime, "for i in 1 2 3; do\n  echo $i\ndone\necho done")
    assert result.output == "1\n2\n3\ndone\n" and result.exit_code == 0


async def test_hard_timeout_kills_and_returns_what_was_printed(runtime: Runtime) -> None:
    started = time.monotonic()
    result = await run(runtime, "echo before; sleep 1000; echo never", timeout=1)
    assert time.monotonic() - started < 10
    assert result.timed_out and "before" in result.output and "never" not in result.output
    after = await run(runtime, "echo after")
    assert after.output == "after\n" and after.exit_code == 0


async def test_a_timed_out_line_runs_nothing_after_the_command(runtime: Runtime) -> None:
    """A command that ignores Ctrl-C was killed alone and bash ran the rest of its line."""
    line = "bash -c \"trap '' INT; sleep 1000\"; echo ran > after-the-timeout"
    result = await run(runtime, line, timeout=1)
    assert result.timed_out and "shell was replaced" in result.output
    check = await run(runtime, "ls after-the-timeout 2>/dev/null | wc -l; echo alive")
    assert check.output.split() == ["0", "alive"]


async def test_hard_timeout_stops_a_busy_shell_loop(runtime: Runtime) -> None:
    result = await run(runtime, "while true; do :; done", timeout=1)
    assert result.timed_out
    assert (await run(runtime, "echo ok")).output == "ok\n"


async def test_timeout_kills_the_whole_process_group(runtime: Runtime) -> None:
    result = await run(runtime, "sh -c 'sleep 300 & sleep 300; wait'", timeout=1)
    assert result.timed_out
    survivors = await run(runtime, "pgrep -f 'sleep 300' | wc -l")
    assert survivors.output.strip() == "0"


async def test_silent_command_returns_early_and_takes_input(runtime: Runtime) -> None:
    script = 'read -r name; echo "hello $name"'
    waiting = await run(runtime, f"bash -c '{script}'")
    assert waiting.still_running and waiting.exit_code is None
    busy = await runtime.execute(Run(command="echo other"))
    assert isinstance(busy, ErrorObservation) and "still running" in busy.message
    answered = await run(runtime, "chronicle", is_input=True)
    assert answered.output == "hello chronicle\n" and answered.exit_code == 0
    assert not answered.still_running


async def test_ctrl_c_interrupts_a_running_command(runtime: Runtime) -> None:
    waiting = await run(runtime, "sleep 1000")
    assert waiting.still_running
    interrupted = await run(runtime, "C-c", is_input=True)
    assert interrupted.exit_code == 130 and not interrupted.still_running
    assert (await run(runtime, "echo works")).output == "works\n"


async def test_input_without_a_running_command_is_an_error(runtime: Runtime) -> None:
    observation = await runtime.execute(Run(command="hello", is_input=True))
    assert (
        isinstance(observation, ErrorObservation) and "no command is running" in observation.message
    )


async def test_long_output_keeps_head_and_tail(runtime: Runtime) -> None:
    result = await run(runtime, "seq 1 100000")
    assert result.truncated and result.exit_code == 0
    assert result.output.startswith("1\n2\n3\n") and result.output.rstrip().endswith("100000")
    assert "truncated" in result.output and len(result.output) < 31_000


async def test_hundred_megabytes_of_output(runtime: Runtime) -> None:
    started = time.monotonic()
    result = await run(
        runtime, "head -c 100000000 /dev/zero | tr '\\0' 'x'; echo; echo END", timeout=120
    )
    assert result.exit_code == 0 and result.truncated
    assert result.output.rstrip().endswith("END") and len(result.output) < 31_000
    assert time.monotonic() - started < 60
    assert (await run(runtime, "echo fine")).output == "fine\n"


async def test_background_job_does_not_block(runtime: Runtime) -> None:
    started = time.monotonic()
    result = await run(runtime, "sleep 100 & echo started")
    assert "started" in result.output and result.exit_code == 0
    assert time.monotonic() - started < 5


async def test_binary_output_becomes_replacement_characters(runtime: Runtime) -> None:
    result = await run(runtime, "printf 'ok \\xff\\xfe\\x00 end\\n'")
    assert result.exit_code == 0
    assert result.output.startswith("ok ") and "\ufffd" in result.output and "end" in result.output


async def test_exited_shell_is_replaced(runtime: Runtime) -> None:
    await run(runtime, "exit")
    result = await run(runtime, "echo reborn")
    assert "reborn" in result.output and result.exit_code == 0
