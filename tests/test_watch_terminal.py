"""Watch mode (smem --interval) on a terminal: a pseudo-terminal redrawn in place, its keys, its
modes restored however smem ends, and a tmux pane read as a person sees it.  Apart from the
streams (test_watch.py) because these drive smem through a terminal, not its output.
"""

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import termios
import time

import pytest

from conftest import TESTS, run_smem

ME = str(os.getpid())


def _spawn_on_a_terminal(*args, sigint_ignored=False):
    """smem ARGS with a new pseudo-terminal as its controlling terminal and standard streams:
    (process, master fd, slave fd: kept open here, so the terminal's modes can be read after
    smem ends); ``sigint_ignored``: started with SIGINT ignored, as a script's ``&`` starts it."""
    import fcntl
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}

    def started():
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        if sigint_ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    proc = subprocess.Popen([sys.executable, "-m", "smem", *args], stdin=slave, stdout=slave, stderr=slave,
                            cwd=TESTS.parent, env=env, start_new_session=True, preexec_fn=started)
    return proc, master, slave


class _Terminal:
    def __init__(self, master):
        self.master = master
        self.seen = b""

    def wait_for(self, pattern):
        """Read the screen until ``pattern`` (bytes regex) appears after what was read before."""
        start = len(self.seen)
        guard = time.monotonic() + 60  # a hang guard, not a timing
        while not re.search(pattern, self.seen[start:]):
            assert time.monotonic() < guard, f"no {pattern!r} on the screen in 60 s: {self.seen[-500:]!r}"
            self._read(f"no {pattern!r} on the screen")

    def _read(self, what):
        ready, _, _ = select.select([self.master], [], [], 60)  # a hang guard, not a timing
        assert ready, f"{what} in 60 s: {self.seen[-500:]!r}"
        data = os.read(self.master, 65536)
        self.seen += data
        return data

    def finish(self, proc):
        """smem's exit status, once what it wrote is read."""
        status = proc.wait(60)
        while select.select([self.master], [], [], 0)[0] and self._read("the end"):
            pass
        return status


def _on_a_terminal(*args, sigint_ignored=False):
    proc, master, slave = _spawn_on_a_terminal(*args, sigint_ignored=sigint_ignored)
    modes = termios.tcgetattr(slave)
    return proc, _Terminal(master), slave, modes


def _close(proc, screen, slave):
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    os.close(screen.master)
    os.close(slave)


@pytest.mark.uses("cpu")
def test_terminal_redrawn_in_place_and_keys():
    proc, screen, slave, modes = _on_a_terminal("--interval", "0.2", "--pid", ME, "-c", "pid pss dpss status")
    try:
        screen.wait_for(rb"\x1b\[H.*frame 2 .*\n.*sort pss  \[q quit")  # home, then frame 2 over frame 1
        assert termios.tcgetattr(slave)[3] & termios.ECHO == 0  # cbreak: keys are not echoed
        os.write(screen.master, b"s")
        screen.wait_for(rb"sort dpss  \[")  # the next column shown
        os.write(screen.master, b"r")
        screen.wait_for(rb"sort dpss reversed")
        os.write(screen.master, b"p")
        screen.wait_for(rb"PAUSED")
        os.write(screen.master, b"q")
        assert screen.finish(proc) == 0
        assert termios.tcgetattr(slave) == modes
    finally:
        _close(proc, screen, slave)
    last = screen.seen.rpartition(b"\x1b[H")[2]
    assert re.search(rb"\n *" + ME.encode() + rb" +\d+ +-?\d+", last)  # the table, under the status lines
    assert last.endswith(b"\x1b[?25h\r\n")  # the cursor shown again, the prompt under the last frame


#: a frame of 11 lines: home, 10 lines ended by erase-line and a new line, one more and erase-below
ELEVEN_LINES = rb"\x1b\[H(?:[^\x1b]*\x1b\[K\r\n){10}[^\x1b]*\x1b\[K\x1b\[J"


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("how, status", [("ctrl-c", 0), ("sigterm", 128 + signal.SIGTERM)])
def test_terminal_restored_on_ctrl_c_and_sigterm(how, status):
    """Also: a table taller and wider than the terminal is cut to fit it."""
    proc, screen, slave, modes = _on_a_terminal("--interval", "0.2", "--pid", ME, "-m")
    try:
        screen.wait_for(rb"frame 1 ")
        import fcntl
        import struct
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 12, 70, 0, 0))
        screen.wait_for(ELEVEN_LINES)  # 12 lines, the last left for the cursor
        assert termios.tcgetattr(slave) != modes  # cbreak now
        if how == "ctrl-c":
            os.write(screen.master, b"\x03")  # the terminal sends SIGINT
        else:
            proc.send_signal(signal.SIGTERM)
        assert screen.finish(proc) == status
        assert termios.tcgetattr(slave) == modes
    finally:
        _close(proc, screen, slave)
    assert screen.seen.endswith(b"\x1b[?25h\r\n")
    lines = [line.lstrip(b"\r\n") for line in re.findall(ELEVEN_LINES, screen.seen)[-1][3:].split(b"\x1b[K")[:-1]]
    assert len(lines) == 11 and b"rows off the screen)" in lines[1] and max(map(len, lines)) == 69
    assert lines[1].endswith(b"p") and lines[2] == b"  pause]"  # the lines over the table wrap, not cut
    # the change before the name that flows to the width, as top puts its command last
    assert lines[3].split() == [b"PIDs", b"AVGPSS", b"PSS", b"dPSS", b"Status", b"Map"]
    pss = [int(line.split()[2]) for line in lines[4:]]
    assert len(pss) == 7 and pss == sorted(pss)
    mappings = json.loads(run_smem("-m", "--pid", ME, "-F", "json").stdout)["rows"]
    largest = max(mappings, key=lambda m: m["pss"])["map"].encode()
    # the end of the table is shown, the largest last; its name cut to the width
    name = lines[-1].split(maxsplit=4)[-1].strip()
    assert name and largest.startswith(name)


IGNORED = (b"smem: SIGINT is ignored, as what started smem left it (a script's &): Ctrl-C and kill -INT do "
           b"not stop watching; SIGTERM does")


@pytest.mark.uses("cpu")
def test_a_watch_that_ctrl_c_cannot_stop_says_so_on_its_screen():
    """Started with SIGINT ignored (a script's ``smem --interval 1 &``): the line that says so, and
    that SIGTERM stops it, is under each frame drawn (said on stderr only, it was drawn over at
    once), wrapped, not cut; Ctrl-C does nothing, SIGTERM ends it."""
    import fcntl
    import struct
    proc, screen, slave, modes = _on_a_terminal("--interval", "0.2", "--pid", ME, "-c", "pid pss",
                                                sigint_ignored=True)
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 70, 0, 0))
        screen.wait_for(rb"frame 2 ")
        os.write(screen.master, b"\x03")  # the terminal's SIGINT: ignored
        screen.wait_for(rb"frame 4 ")
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert screen.finish(proc) == 128 + signal.SIGTERM
        assert termios.tcgetattr(slave) == modes
    finally:
        _close(proc, screen, slave)
    frames = re.findall(rb"\x1b\[H(.*?)\x1b\[J", screen.seen, re.S)
    last = [line.lstrip(b"\r\n") for line in frames[-1].split(b"\x1b[K")]
    table = next(i for i, line in enumerate(last) if re.match(rb" *" + ME.encode() + rb" +\d+ *$", line))
    said = b" ".join(line.strip() for line in last[table + 1:] if line.strip())
    assert said == IGNORED, last  # under the table, whole
    assert all(len(line) < 70 for line in last)


def test_a_terminal_that_hangs_up_ends_without_a_traceback():
    """The keyboard's terminal goes away mid-watch: keys stop, and leaving restores nothing
    that is gone, without an error."""
    from smem.terminal import Screen
    master, slave = pty.openpty()
    written = []
    try:
        with Screen(written.append, slave, slave) as screen:
            assert screen.has_keys
            os.close(master)
            master = None
            assert screen.keys(1) == ""
            assert not screen.has_keys
    finally:
        if master is not None:
            os.close(master)
        os.close(slave)
    assert written[-1].startswith("\x1b[?25h")  # the cursor shown again


def _from_frame(n):
    """The status line of frame ``n`` (1-9) or a later one: a pane read every 0.1 s on a busy
    machine can miss a frame of 0.2 s, and the next one shows the same (a run saw frame 298 and
    failed, waiting for 3)."""
    return rf"frame (?:[{n}-9]|\d{{2,}}) "


class _Tmux:
    """smem in a tmux pane of a private server: what a person sees, read with capture-pane."""

    def __init__(self, columns, lines, *args):
        self.socket = f"smem-test-{os.getpid()}-{time.monotonic_ns()}"
        env = " ".join(f"-e {k}=" for k in ("COLUMNS", "LINES"))
        command = " ".join([sys.executable, "-m", "smem", *args])
        self._tmux("new-session", "-d", "-x", str(columns), "-y", str(lines), "-c", str(TESTS.parent),
                   *env.split(), command + "; sleep 600")

    def _tmux(self, *args):
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, check=True,
                              timeout=30).stdout.decode()

    def screen(self):
        return self._tmux("capture-pane", "-p").splitlines()

    def wait_for(self, pattern):
        """The screen once ``pattern`` (a regex) is on it."""
        guard = time.monotonic() + 60  # a hang guard, not a timing
        while not re.search(pattern, "\n".join(screen := self.screen()), re.M):
            assert time.monotonic() < guard, f"no {pattern!r} on the screen in 60 s:\n" + "\n".join(screen)
            time.sleep(0.1)
        return screen

    def press(self, key):
        self._tmux("send-keys", key)

    def close(self):
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)


def _sleeper(*argv, kib=0):
    """A python that holds ``kib`` KiB written and waits on stdin, with ``argv`` in its command line."""
    code = "import sys; b = b'x' * int(sys.argv[1]); print('ready', flush=True); sys.stdin.read()"
    proc = subprocess.Popen([sys.executable, "-c", code, str(kib * 1024), *argv], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"ready\n"
    return proc


@pytest.mark.uses("cpu")
@pytest.mark.skipif(subprocess.run(["which", "tmux"], capture_output=True).returncode != 0, reason="needs tmux")
def test_a_wide_terminal_shows_whole_names_and_lines_and_folds_gone_rows():
    """At 160 columns: the command flows to the width (not 27 characters), the status and warning
    lines are whole; with --delta first, gone rows stay a few reports, then fold into one line."""
    marker = f"smem-wide-{os.getpid()}"
    children = [_sleeper(f"{marker}-big", kib=48 * 1024) for _ in range(3)]  # left out by --max-rss
    small = [_sleeper(f"{marker}-small") for _ in range(8)]
    long = _sleeper(f"{marker}-long-" + "x" * 150, kib=16 * 1024)  # the largest shown: the last row
    children += small + [long]
    tmux = _Tmux(160, 14, "--interval", "0.2", "-P", marker, "--max-rss", "32M", "-t")
    try:
        screen = tmux.wait_for(_from_frame(3))
        (row,) = [line for line in screen if line.split()[:1] == [str(long.pid)]]
        with open(f"/proc/{long.pid}/cmdline", "rb") as f:
            command = f.read().rstrip(b"\0").replace(b"\0", b" ").decode()
        shown = row[row.index(command[:20]):]
        assert len(row) == 159 and len(shown) > 80 and command.startswith(shown), row  # flows to the width
        warning = [line for line in screen if line.startswith("smem: warning: --max-rss left out 3 processes")]
        assert len(warning) == 1 and all(f"pid {c.pid} " in warning[0] for c in children[:3]), screen
        assert len(warning[0]) > 80 and warning[0].endswith(")")
        tmux.press("p")
        screen = tmux.wait_for(r"PAUSED")
        assert re.fullmatch(r"sort pss  PAUSED  \(\+\d+ rows off the screen\)  \[q quit  s sort  r reverse  p pause\]",
                            screen[1]), screen[1]
        tmux.press("p")
        for child in small:  # (all told at once, then waited for: gone in one frame, not spread over several)
            child.stdin.close()
        for child in small:
            child.wait()
        gone_row = r" -\d+ gone "  # the change (all of it), then the mark
        screen = tmux.wait_for(gone_row)
        assert "more gone since" not in "\n".join(screen)
        # folded after a few reports: one line for the eight, with their change; no gone rows
        screen = tmux.wait_for(r"^8 more gone since \d\d:\d\d:\d\d: dPSS -\d+ *$")
        assert not [line for line in screen if re.search(gone_row, line)]
    finally:
        tmux.close()
        for child in children:
            if child.poll() is None:
                child.stdin.close()
                child.wait()


def test_a_recording_whose_first_frame_is_damaged_plays_the_rest_on_a_terminal(tmp_path, pid_namespace):
    """The others drawn, the terminal restored, then the one error line and exit 1."""
    pytest.importorskip("zstandard", reason="smem[compression]: zstandard not installed")
    rec = tmp_path / "rec"
    recorder = subprocess.run(pid_namespace.argv([sys.executable, "-m", "smem", "record", "-o", str(rec),
                                                  "--interval", "0.1", "--count", "3"], cwd=TESTS.parent),
                              cwd=TESTS.parent, capture_output=True, timeout=600)
    assert recorder.returncode == 0, recorder.stderr
    (rec / "frames" / "000001.zst").write_bytes(b"damaged")
    proc, screen, slave, modes = _on_a_terminal("-S", rec, "--speed", "1000")
    try:
        screen.wait_for(rb"frame 3/3 ")
        assert screen.finish(proc) == 1
        assert termios.tcgetattr(slave) == modes
    finally:
        _close(proc, screen, slave)
    assert b"frame 2/3 " in screen.seen and b"frame 1/3 " not in screen.seen
    assert screen.seen.rstrip().endswith(b"frames/000001.zst: damaged or cut short: not a zstd frame: "
                                         b"skipped, the other frames played")


@pytest.mark.uses("cpu")
@pytest.mark.skipif(subprocess.run(["which", "tmux"], capture_output=True).returncode != 0, reason="needs tmux")
def test_a_name_of_wide_characters_is_cut_to_the_width_not_wrapped():
    """A command line of wide characters (CJK, emoji: two columns each) was cut to the width in
    characters, twice as wide on the screen: its line wrapped, and the frame scrolled its status
    lines off the top, whatever process named itself so.  Each line is cut to the columns it takes."""
    marker = f"smem-wide-chars-{os.getpid()}"
    code = "import sys; b = b'x' * int(sys.argv[1]); print('ready', flush=True); sys.stdin.read()"
    children = []
    for i in range(12):  # (argv[0] of wide characters: the command line starts with them)
        children.append(subprocess.Popen(["漢字" * 60, "-c", code, str((i + 1) << 20), marker], executable=sys.executable,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE))
        assert children[-1].stdout.readline() == b"ready\n"
    tmux = _Tmux(80, 10, "--interval", "0.2", "-P", marker)
    try:
        screen = tmux.wait_for(_from_frame(4))
        assert screen[0].startswith("smem processes "), screen
        assert screen[1].startswith("sort pss "), screen
        assert screen[2].split()[:2] == ["PID", "User"], screen
        table = [line for line in screen[3:] if line.strip()]
        assert len(table) == 6 and all(line.split()[0] in {str(c.pid) for c in children} for line in table), screen
    finally:
        tmux.close()
        for child in children:
            child.stdin.close()
            child.wait()
