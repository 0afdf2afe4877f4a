"""What a user who is not root is told of the processes smem could not see: each command that
reads "every process" says, in one line, which it left out and why, where nothing else would.

Each test runs smem as nobody in a PID and mount namespace of its own (unshare), beside one
process of root's that nobody may not read (a sleep), over a /proc mounted as the test says:
the namespace holds just these two, and a proc mount made there is gone with it.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

from conftest import AS_NOBODY, TESTS

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                                reason="needs root to mount a proc and become nobody, and util-linux's unshare")

#: pid 1 of the namespace: a proc mounted with OPTIONS over /proc, root's sleep beside (named
#: sleep by then), then the command
_INSIDE = ('mount -t proc -o "$1" proc /proc || exit 77; shift; sleep 600 & '
           'while read -r c </proc/$!/comm && [ "$c" != sleep ]; do :; done; exec "$@"')


def _as_nobody(code, options="rw", imports=""):
    """``code`` (Python) run as nobody in a namespace over a /proc of ``options``, once ``imports``
    (a statement) are imported as root (the interpreter may live under /root)."""
    return _inside([sys.executable, "-c", imports + AS_NOBODY + code], options)


def _inside(argv, options, **kw):
    argv = ["unshare", "--pid", "--fork", "--mount", "--propagation", "private", "sh", "-c", _INSIDE, "sh", options,
            *argv]
    proc = subprocess.run(argv, capture_output=True, cwd=TESTS.parent, stdin=subprocess.DEVNULL, timeout=120, **kw)
    if proc.returncode == 77:
        pytest.skip(f"cannot mount a proc with {options} here")
    return proc


@pytest.fixture
def nobodys():
    """A directory nobody may write (pytest's own are root's alone)."""
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o777)
        yield d


def _warnings(proc):
    return [line for line in proc.stderr.decode().splitlines() if "warning" in line]


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("options", ["hidepid=invisible", "hidepid=2", "hidepid=ptraceable"])
def test_a_proc_that_hides_other_users_processes_is_said(options):
    """hidepid=invisible (2) lists no directory for root's sleep: nothing is unreadable, so the
    report of nobody's one process said nothing, and its totals looked like the machine's."""
    proc = _as_nobody("smem.cli.main(['-t'])", options)
    assert proc.returncode == 0, proc.stderr
    (warning,) = _warnings(proc)
    hiding = "ptraceable" if "ptraceable" in options else "invisible"
    assert re.fullmatch(rf"smem: warning: /proc is mounted hidepid={hiding}: .* are hidden from smem and left out; "
                        r"run as root to see them", warning), warning
    assert "Traceback" not in proc.stderr.decode()
    # under invisible, a member of the mount's gid= group sees every process: root's sleep is
    # then unreadable, named as such, and the mount's option is not mentioned (ptraceable hides
    # it from the group too)
    proc = _as_nobody("smem.cli.main(['-t'])", f"{options},gid=65534")
    assert proc.returncode == 0, proc.stderr
    (grouped,) = _warnings(proc)
    if hiding == "invisible":
        assert "1 process could not be read (permission denied): pid " in grouped and "(sleep)" in grouped, grouped
    else:
        assert grouped == warning


_CAPTURE_IMPORTS = "import smem.app, smem.capture_writer, smem.capture_command, smem.output; "


@pytest.mark.uses("cpu")
def test_a_capture_under_hidepid_says_what_it_left_out(nobodys):
    code = f"smem.cli.main(['capture', '--compression', 'none', '-o', {nobodys + '/c.tar'!r}])"
    proc = _as_nobody(code, "hidepid=invisible", _CAPTURE_IMPORTS)
    assert proc.returncode == 0, proc.stderr
    assert _warnings(proc) == ["smem: warning: /proc is mounted hidepid=invisible: other users' processes are "
                               "hidden from smem and left out; run as root to capture them"]


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("options", ["rw", "hidepid=invisible"])
def test_a_recording_says_what_its_frames_leave_out(nobodys, options):
    """smem capture said which processes it left out; smem record, which writes the same captures
    as frames, said nothing, and a night's recording silently lacked every other user's."""
    pytest.importorskip("zstandard", reason="smem[compression]: zstandard not installed")
    imports = ("import zstandard, smem.app, smem.capture_writer, smem.capture_command, smem.recording.record, "
               "smem.recording.store, smem.recording.frames, smem.recording.stopping, smem.output; ")
    code = f"smem.cli.main(['record', '-o', {nobodys + '/rec'!r}, '--count', '2', '--interval', '0.1'])"
    proc = _as_nobody(code, options, imports)
    assert proc.returncode == 0, proc.stderr
    (warning,) = _warnings(proc)  # once, not at every frame
    if options == "rw":
        assert re.fullmatch(r"smem: warning: 1 process could not be read and was left out of the recording: "
                            r"pid \d+ \(sleep\); run as root to record them", warning), warning
    else:
        assert warning == ("smem: warning: /proc is mounted hidepid=invisible: other users' processes are hidden "
                           "from smem and left out of the recording; run as root to record them")


@pytest.mark.skipif(not shutil.which("setpriv"), reason="no setpriv")
@pytest.mark.parametrize("shell", [pytest.param(s, marks=pytest.mark.skipif(not shutil.which(s[0]), reason=f"no {s[0]}"))
                                   for s in (["dash"], ["busybox", "sh"])], ids=["dash", "busybox"])
@pytest.mark.parametrize("hiding", ["invisible", "ptraceable"])
def test_smemcap_sh_under_hidepid_says_what_it_left_out(nobodys, shell, hiding):
    """As smem capture says it (the script has no other way to learn of a process it cannot see)."""
    from smemcap_shells import SCRIPT, script_env
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", shutil.which(shell[0]), *shell[1:], str(SCRIPT)]

    def warning(options):
        proc = _inside(argv, options, env=script_env(os.environ["PATH"], nobodys))
        assert proc.returncode == 0, proc.stderr
        (line,) = proc.stderr.decode().splitlines()
        return line
    which = "other users' processes" if hiding == "invisible" else "the processes it may not trace"
    said = (f"smemcap.sh: warning: /proc is mounted hidepid={hiding}: {which} are hidden and left out; "
            "run as root to capture them")
    assert warning(f"hidepid={hiding}") == said
    grouped = warning(f"hidepid={hiding},gid=65534")
    if hiding == "invisible":  # the group sees root's sleep, and may not read it
        assert re.fullmatch(r"smemcap.sh: warning: 1 process could not be read and was left out: pid \d+ \(sleep\); "
                            r"run as root to capture them", grouped), grouped
    else:  # not even the group sees it
        assert grouped == said


@pytest.mark.uses("cpu")
def test_shared_memory_says_its_mappers_are_of_the_processes_read():
    """--shm finds who maps an object in each process's maps and fds: as nobody, an object only
    root's processes map showed Mapped 0 and all of it Unmapped, as if nothing mapped it."""
    proc = _as_nobody("smem.cli.main(['--shm'])", imports="import smem.shared_memory, smem.sources.shmem_probe; ")
    assert proc.returncode == 0, proc.stderr
    assert ("Mapped, Unmapped and Processes are of the processes read: what the 1 not read maps counts as unmapped"
            in proc.stdout.decode().splitlines()), proc.stdout.decode()


@pytest.mark.uses("cpu")
def test_a_json_document_names_the_processes_its_totals_leave_out():
    """A program reads the document, not the warning on stderr: its rows and totals were nobody's
    processes alone, with nothing in it saying that root's sleep was left out."""
    import json
    proc = _as_nobody("smem.cli.main(['-F', 'json', '-t'])", imports="import json, smem.formats.json_document; ")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    (left_out,) = document["unreadable"]
    assert left_out["reason"] == "permission denied" and left_out["count"] == 1 and len(left_out["pids"]) == 1
    assert left_out["pids"][0] not in {row["pid"] for row in document["rows"]}


_PIE = """
import json
from smem.app import plan, read_snapshot
from smem.chart_data import pie_data
from smem.options import ChartOptions, Query, ReportRequest, SystemOptions, TableOptions
from smem.report import make_table
from smem.views import VIEWS

def pie(ram_kib):
    request = ReportRequest(Query(view="user"), TableOptions(), ChartOptions("pie", "user"),
                            SystemOptions(realmem_bytes=ram_kib * 1024 if ram_kib else None))
    snapshot, _ = read_snapshot(request, plan(request))
    return pie_data(make_table([snapshot], VIEWS["user"], request.table, request.system, request.chart),
                    request.table, snapshot)

used = sum(pie(None).values)  # (a machine's RAM is far more than nobody's one process: no unused slice)
drawn = pie(2 * used)
print(json.dumps({"labels": drawn.labels, "notes": drawn.notes}))
"""


@pytest.mark.uses("charts")
def test_a_pie_does_not_call_the_memory_of_processes_not_read_unused():
    """Where RAM is at most twice the processes' PSS the pie fills it with an "unused" slice: run
    without root, that slice held every process not read, root's whole memory drawn as unused."""
    import json
    pytest.importorskip("matplotlib", reason="smem[charts]: matplotlib not installed")
    proc = _as_nobody(_PIE, imports="import json, smem.chart_data, smem.report, smem.app; ")
    assert proc.returncode == 0, proc.stderr
    pie = json.loads(proc.stdout)
    assert pie["labels"] == ["nobody"]
    (note,) = [n for n in pie["notes"] if n.startswith("RAM not in")]
    assert re.fullmatch(r"RAM not in the processes read \S+ \(\d+\.\d% of \S+: free memory, page cache, the kernel's "
                        r"and the 1 process not read\) not drawn: the pie is the \S+ the processes read hold", note), note


@pytest.mark.uses("cpu")
def test_pid_of_a_process_that_cannot_be_read_is_an_error_saying_why():
    """--pid of root's sleep alone printed the warning, an empty table and status 0: a script
    read that the process held nothing.  It is an error now, as a pid not found is, naming why."""
    code = ("pid = next(int(e) for e in os.listdir('/proc') if e.isdigit() and int(e) != os.getpid() "
            "and open(f'/proc/{e}/comm').read() == 'sleep\\n'); smem.cli.main(['--pid', str(pid), '-t'])")
    proc = _as_nobody(code)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == b""
    (line,) = proc.stderr.decode().splitlines()
    assert re.fullmatch(r"smem: --pid \d+: could not be read \(permission denied\); run as root to see it", line), line


@pytest.mark.uses("shells")
@pytest.mark.parametrize("options", ["rw", "hidepid=invisible"])
@pytest.mark.parametrize("writer", ["smem capture", "smemcap.sh"])
def test_a_capture_taken_without_root_says_so_when_read(nobodys, writer, options):
    """The writer's warning is seen once, where the capture is taken; whoever reads it later (smem
    -S, smem diff, on another machine) saw totals of the writer's processes alone, without a word."""
    from conftest import run_smem
    from smemcap_shells import SCRIPT
    path = nobodys + "/c.tar"
    if writer == "smem capture":
        proc = _as_nobody(f"smem.cli.main(['capture', '--compression', 'none', '-o', {path!r}])", options,
                          _CAPTURE_IMPORTS)
    else:
        proc = _inside(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", str(SCRIPT), path],
                       options, env=dict(os.environ, TMPDIR=nobodys))
    assert proc.returncode == 0, proc.stderr
    read = run_smem("-S", path, "-t")
    assert read.returncode == 0, read.stderr
    if options == "rw":
        said = f"capture {path} left out 1 process its writer could not read (a writer not root reads only its own user's)"
    else:
        said = f"capture {path} was taken from a /proc mounted hidepid=invisible, without root: the processes it hid are not in it"
    assert read.stderr.decode().splitlines() == [f"smem: warning: {said}"]


def test_a_capture_root_could_not_read_all_of_does_not_say_it_was_taken_without_root(tmp_path):
    """Root can be refused a process too (one of another container's namespace, a security module's
    choice): a capture taken as root that left one out was read back with "(a writer not root reads
    only its own user's)", telling the user to capture again as root.  Here the kernel's refusal is
    a source whose smaps of one process cannot be read."""
    import io
    import tarfile

    from conftest import run_smem
    from smem.capture_writer import write_capture
    from smem.sources.live import LiveSource

    if os.geteuid() != 0:
        pytest.skip("a capture taken as root")
    refused = os.getppid()

    class Refusing(LiveSource):
        def pids(self):
            return [os.getpid(), refused]

        def read_optional(self, name):
            return None if name.startswith(f"{refused}/smaps") else super().read_optional(name)

    buffer = io.BytesIO()
    skipped = write_capture(Refusing(), buffer, compression=None).skipped
    assert [pid for pid, _ in skipped] == [refused]
    path = tmp_path / "c.tar"
    path.write_bytes(buffer.getvalue())
    read = run_smem("-S", path, "-t")
    assert read.returncode == 0, read.stderr
    assert read.stderr.decode().splitlines() == [
        f"smem: warning: capture {path} left out 1 process its writer could not read (its writer ran as root: "
        "the kernel refused it even so)"]  # (one process: it, not them)


@pytest.mark.uses("shells")
def test_a_smemcap_sh_capture_root_could_not_read_all_of_says_its_writer_ran_as_root(tmp_path):
    """The same for smemcap.sh, a board's root: its capture-info said only how many it left out,
    so the capture was read back with "(a writer not root reads only its own user's)".  Here the
    kernel refuses root a process for real: the script runs as root of a user namespace of its
    own (a container's root), beside the real root's sleep, which only the real root may read."""
    from conftest import run_smem
    from smemcap_shells import SCRIPT
    path = tmp_path / "c.tar"
    proc = _inside(["unshare", "--user", "--map-root-user", "sh", str(SCRIPT), str(path)], "rw",
                   env=dict(os.environ, TMPDIR=str(tmp_path)))
    if proc.returncode != 0 and b"unshare" in proc.stderr:
        pytest.skip(f"cannot make a user namespace here: {proc.stderr.decode().strip()}")
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(r"smemcap.sh: warning: 1 process could not be read and was left out: pid \d+ \(sleep\)",
                        proc.stderr.decode().strip()), proc.stderr
    read = run_smem("-S", path, "-t")
    assert read.returncode == 0, read.stderr
    assert read.stderr.decode().splitlines() == [
        f"smem: warning: capture {path} left out 1 process its writer could not read (its writer ran as root: "
        "the kernel refused it even so)"]  # (one process: it, not them)


_SERVE = """
from smem.options import Query, ServeOptions
from smem.serve import SharedCollector
said = []
collector = SharedCollector(Query(), ServeOptions(min_interval=0, max_staleness=0), warn=said.append)
collector.latest()
print(json.dumps(said), flush=True)
sys.stdin.readline()  # root starts another process meanwhile
collector.latest()
print(json.dumps(said), flush=True)
"""


def test_serve_says_processes_not_read_once_however_many_come_and_go(pid_namespace):
    """smem serve logs a warning once, not at every scrape; but the warning of the processes it
    could not read names their number, which changes whenever another user's process starts or
    ends: run without root on a shared server, the log had a line at nearly every scrape (the
    number is the gauge smem_collection_unreadable_processes)."""
    import json
    pytest.importorskip("prometheus_client", reason="smem[metrics]: prometheus_client not installed")
    if not pid_namespace.isolated:
        pytest.skip("needs a PID namespace to know which processes smem sees")
    imports = "import json, prometheus_client, smem.serve, smem.incremental, smem.formats.openmetrics; "
    argv = pid_namespace.argv([sys.executable, "-c", imports + AS_NOBODY + _SERVE], cwd=TESTS.parent)
    server = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              cwd=TESTS.parent)
    other = None
    try:
        first = json.loads(server.stdout.readline() or b"null")
        assert first is not None, server.stderr.read()
        other = subprocess.Popen(pid_namespace.argv(["sleep", "600"]))  # root's: one more not read
        pid_namespace.command_pid(other)
        server.stdin.write(b"\n")
        server.stdin.flush()
        second = json.loads(server.stdout.readline() or b"null")
        assert second is not None, server.stderr.read()
    finally:
        if other is not None:
            os.kill(pid_namespace.command_pid(other), 9)
            other.wait()
        server.kill()
        server.wait()
    # (in the PID namespace, what the breakdown's areas say of the machine is said too: smem.app)
    namespaced = [w for w in first if "lists only the processes of one PID namespace" in w]
    assert len(namespaced) == 1
    (warning,) = [w for w in first if w not in namespaced]
    assert re.fullmatch(r"1 process could not be read \(permission denied\): pid 1 \([^)]*\); run as root to see them",
                        warning), warning
    assert second == first


@pytest.mark.uses("cpu")
def test_a_proc_that_refuses_other_users_processes_says_to_run_as_root():
    """hidepid=noaccess (1) lists root's sleep and refuses its every file with EPERM, not EACCES:
    the warning named it, but without the hint that root may read it."""
    proc = _as_nobody("smem.cli.main(['-t'])", "hidepid=noaccess")
    assert proc.returncode == 0, proc.stderr
    (warning,) = _warnings(proc)
    assert re.fullmatch(r"smem: warning: 1 process could not be read \(operation not permitted\): pid \d+ \(\?\); "
                        r"run as root to see them", warning), warning
