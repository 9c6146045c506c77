"""The interactive terminal, driven through a real pseudo-terminal and read
back through a terminal emulator (pyte), so the test sees the screen a
learner sees."""

from __future__ import annotations

import pytest
from helpers.pty_terminal import start_memora

REPLY = "The present perfect links a past action to now, as in I have lived here for ten years and I still do. " * 4


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_ctrl_c_during_a_reply_shows_each_line_once(server, tmp_path):
    held = server.hold("chat", REPLY, after_chars=80)  # two full lines, then the reply waits
    term = start_memora(server, tmp_path)
    assert term.wait_for(b"You:")
    term.send(b"Explain the present perfect\r")
    held.wait_arrived()
    assert term.wait_for(b"to now, as in I have")  # the first line is full, the reply still streaming
    term.send(b"\x03")
    assert term.wait_for(b"Reply cancelled"), "\n".join(term.screen())
    assert term.wait_for(b"You:", after=b"Reply cancelled")  # the prompt is back
    code = term.close()
    screen = term.screen()
    first = "The present perfect links a past action"
    assert sum(line == first for line in screen) == 1, "\n".join(screen)
    start = screen.index(first)
    assert screen[start - 1] == "Memora:"
    assert screen[start + 1].startswith("to now, as in I have")
    assert code == 0, "\n".join(screen)


@pytest.mark.slow  # a child process on a pty
def test_ctrl_c_clears_a_typed_line_hints_on_an_empty_one_and_ctrl_d_leaves(server, tmp_path):
    term = start_memora(server, tmp_path)
    assert term.wait_for(b"You:")
    term.send(b"I have went to the")  # half a sentence, not sent
    assert term.wait_for(b"went to the")
    term.send(b"\x03")
    term.send(b"status\r")
    assert term.wait_for(b"token counting"), "\n".join(term.lines())
    assert server.chats == []  # the half sentence never reached the tutor, and status ran as typed
    assert term.wait_for(b"You:", after=b"token counting")
    term.send(b"\x03")  # on an empty line: a hint, and Memora stays
    assert term.wait_for(b"press Ctrl-C again"), "\n".join(term.lines())
    assert term.wait_for(b"You:", after=b"press Ctrl-C again")
    code = term.close()  # Ctrl-D
    assert code == 0, "\n".join(term.lines())
    assert "Goodbye!" in "\n".join(term.lines())
