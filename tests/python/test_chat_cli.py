"""`weft chat` as a person uses it: in a terminal (tmux), typing messages and
commands, reading the streamed answers off the screen.

Env: WEFT_BINARY, WEFT_DEFAULT_MODEL (set by ctest). Needs tmux (installed
by scripts/deps.sh).
"""
import os
import shlex
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import CHAT_MODEL, WEFT

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None,
                                reason="tmux is not installed")

PROMPT = ">>> "


class Terminal:
    """A tmux session running one command in a 200x50 window."""

    def __init__(self, command):
        # A tmux server of its own (-L): with one shared server, killing the
        # last session makes it exit while the next test's new-session may
        # still reach its socket, and that new-session fails (seen once in
        # CI, exit 1). Starting a server is retried once, with its error kept.
        errors = []
        for _ in range(2):
            self.name = f"weft-chat-{os.getpid()}-{time.monotonic_ns()}"
            r = subprocess.run(self.tmux("new-session", "-d", "-s", self.name,
                                         "-x", "200", "-y", "50", command),
                               capture_output=True, text=True)
            if r.returncode == 0:
                return
            errors.append(f"exit {r.returncode}: {r.stderr.strip()}")
            time.sleep(0.5)
        raise RuntimeError("tmux new-session failed: " + "; ".join(errors))

    def tmux(self, *args):
        """A tmux command line for this terminal's own server."""
        return ["tmux", "-L", self.name, "-f", "/dev/null", *args]

    def screen(self):
        """The whole scrollback and screen as text."""
        r = subprocess.run(self.tmux("capture-pane", "-p", "-J", "-S", "-2000",
                                     "-t", self.name),
                           capture_output=True, text=True)
        return r.stdout

    def type(self, text):
        subprocess.run(self.tmux("send-keys", "-t", self.name, "-l", text),
                       check=True)
        subprocess.run(self.tmux("send-keys", "-t", self.name, "Enter"),
                       check=True)

    def key(self, key):
        subprocess.run(self.tmux("send-keys", "-t", self.name, key), check=True)

    def wait_for(self, predicate, what, timeout=180.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.screen()
            if predicate(s):
                return s
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; screen:\n"
                             + self.screen())

    def close(self):
        subprocess.run(self.tmux("kill-server"), capture_output=True)
        # tmux leaves the socket file of a killed server behind.
        sockets = os.path.join(os.environ.get("TMUX_TMPDIR", "/tmp"),
                               f"tmux-{os.getuid()}")
        try:
            os.unlink(os.path.join(sockets, self.name))
        except OSError:
            pass
        if getattr(self, "tmp", None):
            shutil.rmtree(self.tmp, ignore_errors=True)


def prompts(screen):
    """How many input prompts the screen shows."""
    return sum(1 for line in screen.splitlines() if line.startswith(PROMPT))


def answer_after(screen, message):
    """The text printed between `message`'s line and the next prompt."""
    lines = screen.splitlines()
    at = max(i for i, line in enumerate(lines) if line == PROMPT + message)
    out = []
    for line in lines[at + 1:]:
        if line.startswith(PROMPT.rstrip()):
            break
        out.append(line)
    return "\n".join(out).strip()


def start_chat(*flags):
    tmp = tempfile.mkdtemp(prefix="weft-chat-")
    rc_file = os.path.join(tmp, "rc")
    cmd = (f"{shlex.quote(WEFT)} chat -m {shlex.quote(CHAT_MODEL)} "
           f"--temp 0 --threads 2 {' '.join(flags)}; "
           f"echo $? > {shlex.quote(rc_file)}; sleep 60")
    term = Terminal(cmd)
    term.rc_file = rc_file
    term.tmp = tmp
    return term


@pytest.fixture
def chat():
    term = start_chat("-n 120", "--ctx 2048")
    yield term
    term.close()


@pytest.fixture
def small_chat():
    # Room for the system prompt and about two turns of 32-token answers.
    term = start_chat("-n 32", "--ctx 160")
    yield term
    term.close()


def say(term, message):
    """Types `message` and waits for its answer to end (the next prompt)."""
    before = prompts(term.screen())
    term.type(message)
    screen = term.wait_for(lambda s: prompts(s) > before,
                           f"the answer to {message!r}")
    return answer_after(screen, message)


def test_two_turns_clear_third_turn_exit(chat):
    chat.wait_for(lambda s: "Send a message" in s and s.rstrip().endswith(">>>"),
                  "the first prompt")
    first = say(chat, "Name the three primary colors.")
    assert "Red" in first
    second = say(chat, "Say that again in one word.")
    assert second
    assert "<|im" not in first + second  # no template marker shown

    before = prompts(chat.screen())
    chat.type("/clear")
    screen = chat.wait_for(lambda s: prompts(s) > before, "/clear")
    assert "Cleared the conversation." in screen

    third = say(chat, "Write a haiku about the sea.")
    assert third

    # A message of several lines between """ lines.
    before = prompts(chat.screen())
    chat.type('"""List these colours:')
    chat.type("red")
    chat.type('blue"""')
    chat.wait_for(lambda s: prompts(s) > before, "the multi-line answer")

    chat.type("/exit")
    chat.wait_for(lambda s: os.path.exists(chat.rc_file), "weft chat to exit",
                  timeout=60)
    with open(chat.rc_file) as f:
        assert f.read().strip() == "0"


@pytest.fixture
def long_chat():
    # Room for a long answer: with -n 120 a loaded machine finished the
    # answer before the Ctrl-C reached it ("reached its length limit").
    term = start_chat("-n 1500", "--ctx 2048")
    yield term
    term.close()


def test_ctrl_c_stops_the_answer_not_the_chat(long_chat):
    chat = long_chat
    chat.wait_for(lambda s: s.rstrip().endswith(">>>"), "the first prompt")
    message = "Write a long story about a dragon who learns to sail."
    chat.type(message)
    # The message and some of the answer are on screen, then Ctrl-C. (A
    # screen without the message is not an answer: under load the check
    # used to pass on the banner alone and send Ctrl-C to the empty prompt.)
    def answer_started(s):
        _, echoed, answer = s.partition(PROMPT + message)
        return bool(echoed) and len(answer.strip()) > 20

    chat.wait_for(answer_started, "the answer to start")
    chat.key("C-c")
    chat.wait_for(lambda s: "(stopped)" in s, "the answer to stop")
    chat.wait_for(lambda s: s.rstrip().endswith(">>>"), "the next prompt")
    # Ctrl-C at the prompt leaves a hint, not the program.
    chat.key("C-c")
    chat.wait_for(lambda s: "Use Ctrl + d or /bye to exit." in s, "the hint")
    assert not os.path.exists(chat.rc_file)
    # Ctrl-D leaves.
    chat.key("C-d")
    chat.wait_for(lambda s: os.path.exists(chat.rc_file), "weft chat to exit",
                  timeout=60)
    with open(chat.rc_file) as f:
        assert f.read().strip() == "0"


def test_full_context_drops_the_oldest_turns(small_chat):
    small_chat.wait_for(lambda s: s.rstrip().endswith(">>>"), "the first prompt")
    for message in ["Name the three primary colors.",
                    "Write a haiku about the sea.",
                    "Name three animals that live in the ocean.",
                    "What is two plus two?"]:
        say(small_chat, message)
    screen = small_chat.screen()
    assert "(the context is full: dropped the oldest" in screen, screen
    small_chat.type("/bye")
    small_chat.wait_for(lambda s: os.path.exists(small_chat.rc_file),
                        "weft chat to exit", timeout=60)
