"""-o as root: never through another user's link, never over what is not ours to replace."""

import importlib.util
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from conftest import FIXTURES, TESTS, run_smem

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"
NOBODY = 65534

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as a second user")
#: the tests that write a chart through -o (the file rules are the same as for a capture)
charts = pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="charts need smem[charts]")
html = pytest.mark.skipif(importlib.util.find_spec("plotly") is None, reason="smem html needs smem[html] (plotly)")
#: the charts written here: the capture's users, a handful of slices (what -o does with the file is
#: the same for every chart; tests/test_charts.py draws the processes' charts)
PIE = ("-S", CAPTURE, "-u", "--pie", "user")
BAR = ("-S", CAPTURE, "-u", "--bar", "user")


def _as_nobody(action):
    """Run ``action()`` in a child that has become uid/gid 65534 (a second, unprivileged user)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            action()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.fixture
def sticky_tmp():
    """A world-writable sticky directory, as /tmp is (in /tmp: the second user must reach it)."""
    import shutil
    import tempfile
    from pathlib import Path
    d = Path(tempfile.mkdtemp(prefix="smem-test-sticky-", dir="/tmp"))
    d.chmod(0o1777)
    yield d
    shutil.rmtree(d)


@pytest.fixture
def secret(tmp_path):
    s = tmp_path / "secret"
    s.write_bytes(b"root:only\n")
    s.chmod(0o600)
    return s


def _one_error_line(proc):
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("smem: ") and "Traceback" not in lines[0], lines
    return lines[0]


@pytest.mark.parametrize("command", [pytest.param("chart", marks=charts), "capture"])
def test_a_link_planted_by_another_user_is_not_followed(sticky_tmp, secret, command):
    link = sticky_tmp / ("chart.png" if command == "chart" else "box.tgz")
    _as_nobody(lambda: os.symlink(secret, link))
    assert os.lstat(link).st_uid == NOBODY
    args = ([*PIE, "-o", link] if command == "chart"
            else ["capture", "-o", link])
    line = _one_error_line(run_smem(*args))
    assert "symbolic link owned by another user" in line
    assert secret.read_bytes() == b"root:only\n" and os.path.islink(link)
    assert sorted(os.listdir(sticky_tmp)) == [link.name]  # nothing left beside it
    # --force replaces files, it does not make another user's link ours
    assert "owned by another user" in _one_error_line(run_smem(*args, "--force"))
    assert secret.read_bytes() == b"root:only\n"


@pytest.mark.uses("charts")
@charts
def test_a_directory_link_planted_by_another_user_is_not_a_way_out(sticky_tmp, tmp_path):
    """A link on the way is another user's: nothing is made, rewritten or replaced behind it,
    whatever the file there holds (an empty file, an old chart) and with --force too."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "empty.png").touch()
    assert run_smem(*PIE, "-o", victim / "old.png").returncode == 0
    before = {p.name: p.read_bytes() for p in victim.iterdir()}
    _as_nobody(lambda: os.symlink(victim, sticky_tmp / "d"))
    for name in ("new.png", "empty.png", "old.png"):
        for force in ([], ["--force"]):
            proc = run_smem(*BAR, "-o", sticky_tmp / "d" / name, *force)
            assert "on the way is a symbolic link owned by another user" in _one_error_line(proc)
    assert {p.name: p.read_bytes() for p in victim.iterdir()} == before
    ours = tmp_path / "ours"  # a link on the way that is ours is followed
    ours.symlink_to(victim)
    assert run_smem(*BAR, "-o", ours / "new.png").returncode == 0
    assert (victim / "new.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.uses("charts")
@charts
def test_our_own_link_is_followed_and_stays_a_link(tmp_path):
    real = tmp_path / "real.png"
    link = tmp_path / "link.png"
    link.symlink_to(real)
    assert run_smem(*PIE, "-o", link).returncode == 0
    assert link.is_symlink() and real.read_bytes().startswith(b"\x89PNG")
    assert run_smem(*BAR, "-o", link).returncode == 0  # a chart replaces a chart
    assert sorted(os.listdir(tmp_path)) == ["link.png", "real.png"]


@pytest.mark.uses("charts")
@charts
def test_an_existing_file_is_replaced_only_when_it_holds_a_chart_or_with_force(tmp_path):
    out = tmp_path / "notes.svg"
    out.write_bytes(b"my notes, not a chart\n")
    line = _one_error_line(run_smem(*PIE, "-o", out))
    assert "--force" in line and out.read_bytes() == b"my notes, not a chart\n"
    png = tmp_path / "old.png"  # an old chart, written by smem: replaced as smem 1.5 users expect
    assert run_smem(*PIE, "-o", png).returncode == 0
    assert run_smem(*BAR, "-o", png).returncode == 0
    wrong = tmp_path / "old.pdf"  # a png named .pdf is not a pdf chart
    wrong.write_bytes(png.read_bytes())
    assert "does not hold a pdf chart" in _one_error_line(run_smem(*PIE, "-o", wrong))
    photo = tmp_path / "photo.png"  # a PNG, but no chart: one matplotlib did not write
    from PIL import Image
    Image.new("RGB", (4, 4), "red").save(photo)
    kept = photo.read_bytes()
    assert "does not hold a png chart" in _one_error_line(run_smem(*PIE, "-o", photo))
    assert photo.read_bytes() == kept
    assert run_smem(*PIE, "--force", "-o", photo).returncode == 0 and photo.read_bytes() != kept
    empty = tmp_path / "empty.png"  # made by mktemp or touch: nothing to lose
    empty.touch()
    assert run_smem(*PIE, "-o", empty).returncode == 0
    assert empty.read_bytes().startswith(b"\x89PNG")


@pytest.mark.uses("charts")
@charts
def test_an_old_chart_is_rewritten_in_place_keeping_owner_and_mode(tmp_path):
    out = tmp_path / "report.png"
    assert run_smem(*PIE, "-o", out).returncode == 0
    os.chown(out, NOBODY, NOBODY)
    out.chmod(0o440)
    before = os.stat(out)
    assert run_smem(*BAR, "-o", out).returncode == 0
    after = os.stat(out)
    assert (after.st_ino, after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == \
        (before.st_ino, NOBODY, NOBODY, 0o440)
    assert sorted(os.listdir(tmp_path)) == ["report.png"]


@pytest.mark.uses("charts")
@charts
def test_force_gives_the_name_to_a_new_file_and_writes_through_no_link(tmp_path):
    out = tmp_path / "report.png"
    out.write_bytes(b"hand-made\n")
    out.chmod(0o640)
    other = tmp_path / "hardlink"  # a second name of the same file: it keeps its content
    os.link(out, other)
    assert "2 hard links" in _one_error_line(run_smem(*PIE, "-o", out))
    assert run_smem(*PIE, "-o", out, "--force").returncode == 0
    assert out.read_bytes().startswith(b"\x89PNG") and other.read_bytes() == b"hand-made\n"
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o640  # the old permissions
    assert sorted(os.listdir(tmp_path)) == ["hardlink", "report.png"]


def _capture(namespace, *args):
    """``python -m smem capture ARGS`` of this checkout in ``namespace``: what is written is a whole
    capture, of the handful of processes there rather than of the machine (tests/pid_namespace.py)."""
    env = dict(os.environ, PYTHONPATH=str(TESTS.parent))
    return subprocess.run(namespace.argv([sys.executable, "-m", "smem", "capture", *args]), env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=120)


def test_capture_replaces_a_capture_not_a_file(pid_namespace, tmp_path):
    cap = tmp_path / "box.tgz"
    cap.write_bytes(CAPTURE.read_bytes())
    done = _capture(pid_namespace, "-o", cap)
    assert done.returncode == 0, done.stderr
    assert cap.read_bytes() != CAPTURE.read_bytes()  # replaced, by a capture:
    assert run_smem("-S", cap, "-w").returncode == 0
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"keep me\n")
    assert "does not hold a capture" in _one_error_line(run_smem("capture", "-o", notes))
    assert notes.read_bytes() == b"keep me\n"


@charts
def test_devices_and_directories_are_refused(tmp_path):
    block = tmp_path / "disk.png"
    char = tmp_path / "null.png"
    try:
        os.mknod(block, 0o600 | stat.S_IFBLK, os.makedev(7, 200))
        os.mknod(char, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("cannot make device nodes here")
    for path, kind in ((block, "block device"), (char, "character device")):
        for args in (["capture", "-o", path], [*PIE, "-o", path]):
            line = _one_error_line(run_smem(*args))
            assert kind in line, line
            # (where to send output to /dev/null: the shell's redirection of -o -, not -o)
            assert line.endswith(f"(-o - > {path})") == (kind == "character device"), line
    folder = tmp_path / "folder.png"
    folder.mkdir()
    assert "directory" in _one_error_line(run_smem(*PIE, "-o", folder))


def test_a_fifo_without_a_reader_is_an_error_not_a_hang(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    started = time.monotonic()
    assert "no reader" in _one_error_line(run_smem("capture", "-o", fifo))
    assert time.monotonic() - started < 30


@charts
def test_a_new_file_follows_the_umask(tmp_path):
    out = tmp_path / "new.svg"
    before = os.umask(0o027)  # (this process's: the one smem's command line runs in, put back after)
    try:
        assert run_smem(*PIE, "-o", out).returncode == 0
    finally:
        os.umask(before)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o640


@pytest.mark.uses("cpu")
def test_sigterm_while_writing_leaves_nothing_behind(tmp_path):
    out = tmp_path / "box.tgz"
    proc = subprocess.Popen([sys.executable, "-m", "smem", "capture", "-o", out], cwd=TESTS.parent,
                            stderr=subprocess.PIPE)
    time.sleep(0.4)  # start-up takes about 0.1 s, a live capture about a second
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode in (0, 128 + signal.SIGTERM, -signal.SIGTERM)
    if proc.returncode == 0 or os.listdir(tmp_path) == ["box.tgz"]:
        # finished, or the signal came once the capture was in place (on a busy machine it can
        # come that late): then it is whole, never a part of one
        assert os.listdir(tmp_path) == ["box.tgz"]
        assert run_smem("-S", out, "-c", "pid").stdout.count(b"\n") > 3
    else:
        assert os.listdir(tmp_path) == []  # (no partial capture, no temporary file)


def test_another_users_file_in_a_sticky_directory_is_not_written(sticky_tmp):
    """An attacker's empty /tmp/box.tgz would receive root's capture and stay theirs to read."""
    bait = sticky_tmp / "box.tgz"
    _as_nobody(lambda: (open(bait, "wb").close(), os.chmod(bait, 0o666)))
    for args in (["capture", "-o", bait], ["capture", "-o", bait, "--force"]):
        line = _one_error_line(run_smem(*args))
        assert "belongs to another user" in line
    assert bait.stat().st_size == 0


def test_another_users_fifo_in_a_sticky_directory_is_not_written(sticky_tmp):
    """Nor their FIFO, with a reader waiting for root's capture."""
    fifo = sticky_tmp / "box.tgz"
    _as_nobody(lambda: os.mkfifo(fifo, 0o666))
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader waiting
    try:
        assert "belongs to another user" in _one_error_line(run_smem("capture", "-o", fifo))
        assert os.read(reader, 100) == b""  # nothing of root's capture reached it
    finally:
        os.close(reader)


def test_a_capture_is_made_readable_by_its_owner_only(pid_namespace, tmp_path):
    out = tmp_path / "box.tgz"
    done = _capture(pid_namespace, "-o", out)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600


@html
def test_a_page_is_made_readable_by_its_owner_only(tmp_path):
    """A page holds every process's command line and mappings, as a capture does."""
    page = tmp_path / "page.html"
    old = os.umask(0o022)
    try:
        run_smem("html", "-S", CAPTURE, "-o", page, check=True)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(page).st_mode) == 0o600


@pytest.mark.uses("cpu")
def test_a_fifo_reader_that_goes_away_is_an_error(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    import select
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader there before smem opens it
    proc = subprocess.Popen([sys.executable, "-m", "smem", "capture", "-o", fifo], cwd=TESTS.parent,
                            stderr=subprocess.PIPE)
    select.select([reader], [], [], 60)
    os.read(reader, 100)  # a little, then away
    os.close(reader)
    err = proc.communicate(timeout=120)[1].decode()
    assert proc.returncode == 1 and "reader went away" in err, err


@pytest.mark.uses("charts")
@charts
def test_a_planted_hard_link_is_not_written_through(tmp_path):
    """A second name for a file elsewhere (a root file that happens to be a chart, or empty)."""
    elsewhere = tmp_path / "precious.png"
    assert run_smem(*PIE, "-o", elsewhere).returncode == 0
    before = elsewhere.read_bytes()
    planted = tmp_path / "chart.png"
    os.link(elsewhere, planted)
    line = _one_error_line(run_smem(*BAR, "-o", planted))
    assert "hard links" in line and "--force" not in line
    assert run_smem(*BAR, "-o", planted, "--force").returncode == 0
    assert elsewhere.read_bytes() == before  # --force replaced the name, not the shared file


@pytest.fixture
def small_disk(tmp_path):
    """A 16 MiB tmpfs of its own (mount(8)), unmounted after."""
    where = tmp_path / "disk"
    where.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(where)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)])


@pytest.mark.uses("cpu")
@html
def test_a_disk_that_fills_keeps_the_old_page_whole(small_disk, tmp_path):
    """An old page rewritten in place (its name, owner and links kept) on a disk without room for
    the longer new one: the old page stays as it was, and the error is one line (it was cut to
    what fitted: its old length and the little room left)."""
    old, new = FIXTURES / "captures" / "faithful.tar.gz", FIXTURES / "captures" / "quirks.tar.gz"
    run_smem("html", "-S", new, "-o", tmp_path / "new.html", check=True)
    page = small_disk / "page.html"
    run_smem("html", "-S", old, "-o", page, check=True)
    before = page.read_bytes()
    grows = (tmp_path / "new.html").stat().st_size - len(before)
    assert grows > 3 * 4096  # (the quirks page is the longer: the rewrite needs room the disk lacks)
    free = os.statvfs(small_disk)  # (the scratch copy is an unnamed file elsewhere: room for half the growth)
    (small_disk / "filler").write_bytes(bytes(free.f_bavail * free.f_frsize - grows // 2))
    proc = run_smem("html", "-S", new, "-o", page)
    assert proc.returncode == 1 and proc.stderr.count(b"\n") == 1 and b"No space left" in proc.stderr, proc.stderr
    assert page.read_bytes() == before
    (small_disk / "filler").unlink()
    run_smem("html", "-S", new, "-o", page, check=True)  # (with room: rewritten whole, as long as a new one)
    rewritten = page.read_bytes()
    assert rewritten.endswith(b"</html>\n") and abs(len(rewritten) - (tmp_path / "new.html").stat().st_size) < 64


#: files of the vector formats that no chart of smem's is: what a user may keep under such a name
#: (a paper a word processor wrote, a drawing, a printout), each naming the program that wrote it
_DOCUMENTS = {
    "pdf": b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [] "
           b"/Count 0 >>\nendobj\n3 0 obj\n<< /Producer (LibreOffice 7.4) /Title (my paper) >>\nendobj\n"
           b"trailer\n<< /Root 1 0 R /Info 3 0 R >>\n%%EOF\n",
    "svg": b'<?xml version="1.0" encoding="UTF-8"?>\n<!-- Created with Inkscape (http://www.inkscape.org/) -->\n'
           b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="5" height="5"/></svg>\n',
    "eps": b"%!PS-Adobe-3.0 EPSF-3.0\n%%Creator: inkscape 1.2\n%%BoundingBox: 0 0 10 10\n%%EndComments\n"
           b"0 0 moveto 10 10 lineto stroke\nshowpage\n%%EOF\n",
    "ps": b"%!PS-Adobe-3.0\n%%Creator: groff version 1.22.4\n%%Pages: 1\n%%EndComments\nshowpage\n%%EOF\n",
}


def _not_a_chart(fmt, path):
    if fmt == "svgz":
        import gzip
        path.write_bytes(gzip.compress(_DOCUMENTS["svg"]))
    elif fmt in _DOCUMENTS:
        path.write_bytes(_DOCUMENTS[fmt])
    else:  # a photo: Pillow, as a camera's or an editor's file
        from PIL import Image
        Image.new("RGB", (64, 64), "red").save(path, format={"jpg": "jpeg", "tif": "tiff"}.get(fmt, fmt))


@pytest.mark.uses("charts")
@charts
@pytest.mark.parametrize("fmt", ["pdf", "svg", "svgz", "eps", "ps", "jpg", "tif", "gif", "webp", "avif"])
def test_a_file_of_the_charts_format_is_replaced_only_when_smem_drew_it(tmp_path, fmt):
    """Any PDF, JPEG, SVG ... was taken for an old chart by its first bytes: -o paper.pdf or -o
    photo.jpg replaced the user's file without --force.  Now only a chart smem drew (matplotlib
    names itself in it, or smem marks it) is rewritten; anything else needs --force."""
    pytest.importorskip("PIL")
    from smem.charts import supported_formats
    if fmt not in supported_formats():
        pytest.skip(f"matplotlib writes no {fmt} here")
    kept = tmp_path / f"mine.{fmt}"
    _not_a_chart(fmt, kept)
    before = kept.read_bytes()
    assert f"does not hold a {fmt} chart" in _one_error_line(run_smem(*PIE, "-o", kept))
    assert kept.read_bytes() == before
    chart = tmp_path / f"chart.{fmt}"  # a chart smem drew: the next one replaces it
    assert run_smem(*PIE, "-o", chart).returncode == 0
    first = chart.read_bytes()
    assert run_smem(*BAR, "-o", chart).returncode == 0 and chart.read_bytes() != first
    assert run_smem(*PIE, "--force", "-o", kept).returncode == 0 and kept.read_bytes() != before
