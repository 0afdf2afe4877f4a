"""A /proc of a PID namespace of its own (a container's) lists only that namespace's processes while
meminfo is the machine's: --breakdown then puts the machine's other processes' memory in the rows
that are not processes', and says so (smem.sources.hidden_pids.pid_namespaced).  Live in a
namespace, and in captures written there by smem capture and smemcap.sh; the machine's own /proc
and its captures say nothing, nor do the process view and plain -w (meminfo's rows alone) anywhere."""

import os
import shutil
import subprocess
import sys
import tarfile

import pytest

from conftest import TESTS
from smem.sources.machine import Machine

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                                reason="a PID namespace needs root and util-linux's unshare")

SAID = "lists only the processes of one PID namespace (a container's)"
SCRIPT = TESTS.parent / "scripts" / "smemcap.sh"


def _in_namespace(argv, **kw):
    return subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", *map(str, argv)], capture_output=True,
                          cwd=TESTS.parent, timeout=120, **kw)


def _smem(*args, namespace=False):
    argv = [sys.executable, "-m", "smem", *map(str, args)]
    proc = _in_namespace(argv) if namespace else subprocess.run(argv, capture_output=True, cwd=TESTS.parent,
                                                                timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr.decode()


def _facts(capture):
    with tarfile.open(capture) as tar:
        text = tar.extractfile(next(m for m in tar if m.name.endswith("capture-info"))).read().decode()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


@pytest.mark.uses("cpu")
@pytest.mark.parametrize("args", [["-w", "--breakdown"], ["-w", "--breakdown", "-R", "32G"]])
def test_the_breakdown_in_a_namespace_says_its_processes_are_not_the_machines(args):
    assert SAID in _smem(*args, namespace=True)
    assert SAID not in _smem(*args)


@pytest.mark.parametrize("args", [["-t"], ["-w"], ["-u"]])
def test_the_views_that_set_no_process_against_meminfo_say_nothing_of_it(args):
    assert SAID not in _smem(*args, namespace=True)


@pytest.mark.uses("shells")
@pytest.mark.parametrize("writer", ["smem capture", "smemcap.sh under dash", "smemcap.sh under busybox sh"])
def test_a_capture_made_in_a_namespace_says_so_and_its_system_view_warns(tmp_path, writer):
    if writer == "smem capture":
        make = lambda out: [sys.executable, "-m", "smem", "capture", "-o", out]  # noqa: E731
    else:
        shell = writer.split(" under ")[1].split()
        if not shutil.which(shell[0]):
            pytest.skip(f"no {shell[0]}")
        make = lambda out: ["sh", "-c", f'{" ".join(shell)} "$0" > "$1"', SCRIPT, out]  # noqa: E731
    inside, outside = tmp_path / "inside.tgz", tmp_path / "outside.tgz"
    assert _in_namespace(make(inside)).returncode == 0
    # (the whole machine, by a shell: 120 s were too few on a loaded one of 1,600 processes)
    assert subprocess.run(make(outside), capture_output=True, cwd=TESTS.parent, timeout=600).returncode == 0
    assert _facts(inside).get("pid_namespace") == "1"
    assert "pid_namespace" not in _facts(outside)
    assert SAID in _smem("-S", inside, "-w", "--breakdown")
    assert SAID not in _smem("-S", outside, "-w", "--breakdown") and SAID not in _smem("-S", inside)


def test_the_fact_is_read_as_a_number_and_garbage_is_unknown():
    assert Machine.from_facts({"pid_namespace": "1"}).pid_namespace == 1
    assert Machine.from_facts({"pid_namespace": "yes<script>"}).pid_namespace is None
    assert Machine.from_facts({}).pid_namespace is None


@pytest.mark.uses("shells")
@pytest.mark.skipif(not shutil.which("setpriv"), reason="util-linux's setpriv runs smemcap.sh as nobody")
def test_smemcap_as_a_user_kept_out_of_pid_2_by_hidepid_noaccess_does_not_call_it_a_namespace(tmp_path):
    """hidepid=noaccess lists /proc/2 and refuses its stat to other users: pid 2 is there, unread,
    so it cannot be told whether it is kthreadd (smemcap.sh said pid_namespace=1 on the host)."""
    out = tmp_path / "noaccess.tgz"
    shell = ("mount -t proc -o hidepid=noaccess proc /proc && "
             'setpriv --reuid=65534 --regid=65534 --clear-groups sh -s <"$0" >"$1"')
    made = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", shell, SCRIPT, out],
                          capture_output=True, timeout=120)
    assert made.returncode == 0, made.stderr
    facts = _facts(out)
    assert facts.get("hidepid") is None and "pid_namespace" not in facts, facts


@pytest.mark.uses("shells")
def test_smemcap_on_a_kernel_before_pid_namespaces_does_not_call_it_one(tmp_path):
    """Before Linux 2.6.22 pid 2 was migration/0 or ksoftirqd/0, no kthreadd (PID namespaces came in
    2.6.24): a capture of such a device (RHEL 5's 2.6.18) said pid_namespace=1.  Its uname -r is
    told here, in a namespace, where pid 2 is no kthreadd either."""
    (tmp_path / "uname").write_text('#!/bin/sh\n[ "$1" = -r ] && exec echo 2.6.18-419.el5\n'
                                    f'exec {shutil.which("uname")} "$@"\n')
    (tmp_path / "uname").chmod(0o755)
    out = tmp_path / "old.tgz"
    path = f"{tmp_path}:{os.environ['PATH']}"
    made = _in_namespace(["env", f"PATH={path}", "sh", "-c", 'sh "$0" >"$1"', SCRIPT, out])
    assert made.returncode == 0, made.stderr
    facts = _facts(out)
    assert facts["kernel"] == "2.6.18-419.el5" and "pid_namespace" not in facts, facts
