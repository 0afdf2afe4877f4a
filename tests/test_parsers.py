"""Each parser against distinct-value samples and every recorded /proc file of ../shared/realproc."""

import re

import pytest

from conftest import FIXTURES, realproc_files
from smem.parsers.cmdline import parse_cmdline
from smem.parsers.ksm import parse_ksm_stat
from smem.parsers.meminfo import parse_meminfo
from smem.parsers.passwd import parse_passwd
from smem.parsers.smaps import ANONYMOUS, parse_smaps
from smem.parsers.maps import parse_maps_objects
from smem.parsers.stat import parse_stat
from smem.parsers.statm import parse_statm
from smem.parsers.vmstat import parse_vmstat
from smem.parsers.status import parse_status, status_ids, status_int

DISTINCT = (FIXTURES / "parsers" / "distinct.smaps").read_bytes()
KERNEL_ORDER = ["Size", "KernelPageSize", "MMUPageSize", "Rss", "Pss", "Pss_Dirty", "Shared_Clean",
                "Shared_Dirty", "Private_Clean", "Private_Dirty", "Referenced", "Anonymous", "KSM",
                "LazyFree", "AnonHugePages", "ShmemPmdMapped", "FilePmdMapped", "Shared_Hugetlb",
                "Private_Hugetlb", "Swap", "SwapPss", "Locked"]


def test_smaps_every_counter_under_its_own_key():
    first = parse_smaps(DISTINCT)[0]
    # the fixture numbers the kB counters 1, 2, 3, ... in the order the kernel prints them
    assert list(first.counters) == KERNEL_ORDER
    assert [first.counters[k] for k in KERNEL_ORDER] == list(range(1, len(KERNEL_ORDER) + 1))
    assert first.attributes["THPeligible"] == "0"
    assert first.attributes["VmFlags"] == "rd mr mw me"
    assert first.perms == "r--p" and first.device == "fe:00"
    assert first.end - first.start == 4096


def test_smaps_names_keep_spaces_and_deleted():
    maps = parse_smaps(DISTINCT)
    assert maps[1].name == "[heap]"
    assert maps[2].name.endswith("/odd name (deleted)")
    assert maps[2].counters["Private_Dirty"] == 8


def test_smaps_anonymous_and_unknown_keys():
    data = (b"7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n"
            b"Size:                  4 kB\nFutureCounter:   7 kB\nRss: 4 kB\n"
            b"Name:\t[anon:dalvik-main space]\n")
    (m,) = parse_smaps(data)
    assert m.name == ANONYMOUS
    assert m.counters == {"Size": 4, "FutureCounter": 7, "Rss": 4}
    assert m.attributes["Name"] == "[anon:dalvik-main space]"


def test_smaps_non_utf8_path_survives():
    data = b"00400000-00401000 r-xp 00000000 08:01 12 /opt/caf\xe9/bin\nRss: 4 kB\n"
    (m,) = parse_smaps(data)
    assert m.name.encode("utf-8", "surrogateescape") == b"/opt/caf\xe9/bin"


def test_smaps_empty_is_no_mappings():
    assert parse_smaps(b"") == []


@pytest.mark.parametrize("path", realproc_files("smaps") + realproc_files("smaps_rollup")
                         + realproc_files("smaps_short") + realproc_files("smaps_rollup_from_test_cpp"),
                         ids=str)
def test_smaps_reads_every_recorded_kernel(path):
    data = path.read_bytes()
    maps = parse_smaps(data)
    headers = sum(1 for line in data.split(b"\n")
                  if line[:1] and line.split(b" ")[0].count(b"-") == 1 and not line.split(b" ")[0].endswith(b":"))
    assert len(maps) == headers
    for m in maps:
        assert m.end >= m.start
        assert all(isinstance(v, int) and v >= 0 for v in m.counters.values())
        if "Rss" in m.counters and "Size" in m.counters:
            assert m.counters["Rss"] <= m.counters["Size"]
    if maps and "Pss" in maps[0].counters:
        # USS never exceeds PSS, which never exceeds RSS (all in KiB, per mapping)
        for m in maps:
            c = m.counters
            assert c["Private_Clean"] + c["Private_Dirty"] <= c["Pss"] + 1 <= c["Rss"] + 1


def test_meminfo_recorded_machine():
    info = parse_meminfo((FIXTURES / "parsers" / "meminfo-6.18").read_bytes())
    assert info.kib["MemTotal"] > info.kib["MemFree"] > 0
    assert "Active(anon)" in info.kib
    raw = (FIXTURES / "parsers" / "meminfo-6.18").read_text()
    assert info.counts["HugePages_Total"] == int(re.search(r"^HugePages_Total:\s+(\d+)$", raw, re.M).group(1))
    assert "HugePages_Total" not in info.kib


def test_ksm_stat_recorded_machine():
    stat = parse_ksm_stat((FIXTURES / "parsers" / "ksm_stat-6.18").read_bytes())
    assert stat["ksm_merging_pages"] == stat["ksm_rmap_items"] == 4096 and stat["ksm_zero_pages"] == 0
    assert stat["ksm_mergeable"] == "yes" and stat["ksm_merge_any"] == "no"  # (the names' colons dropped)


def test_ksm_stat_of_older_kernels_and_what_is_no_line():
    assert parse_ksm_stat(b"ksm_rmap_items 12\n") == {"ksm_rmap_items": 12}  # 6.1: absent is not zero
    assert parse_ksm_stat(b"ksm_process_profit -8192\nksm_new_field 3\n") == {
        "ksm_process_profit": -8192, "ksm_new_field": 3}  # (its bookkeeping can cost more than it saves)
    for garbage in (b"ksm_rmap_items\n", b" 12\n"):
        with pytest.raises(ValueError):
            parse_ksm_stat(garbage)


def test_meminfo_absent_is_not_zero():
    info = parse_meminfo(b"MemTotal:  1000 kB\nMemFree:  10 kB")  # 2.6-era, no final newline
    assert info.kib == {"MemTotal": 1000, "MemFree": 10}
    assert "SReclaimable" not in info.kib


@pytest.mark.parametrize("path", realproc_files("meminfo"), ids=str)
def test_meminfo_reads_every_recorded_kernel(path):
    info = parse_meminfo(path.read_bytes())
    lines = [l for l in path.read_bytes().split(b"\n") if b":" in l and l.split(b":")[1].split()]
    assert len(info.kib) + len(info.counts) == len(lines)
    if "MemTotal" in info.kib:
        assert info.kib["MemTotal"] >= info.kib.get("MemFree", 0)


def test_stat_name_with_parentheses_and_spaces():
    st = parse_stat(b"4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 3 0 1 8192 2 18446744073709551615")
    assert st.comm == "a) b (c)"
    assert st.state == "S" and st.ppid == 1 and st.num_threads == 3
    assert not st.is_kernel_thread


def test_stat_fault_counters():
    """Fields 10 and 12 (proc.rst Table 1-4): what moves when a process touches memory."""
    st = parse_stat(b"13423 (python) S 13094 13083 19162 0 -1 4194304 5022 0 7 0 2 2 0 0 20 0 1 0 1840374 "
                    b"29589504 3419 18446744073709551615")
    assert (st.minflt, st.majflt, st.vsize, st.rss_pages, st.start_time) == (5022, 7, 29589504, 3419, 1840374)


def test_stat_kernel_thread_flag():
    st = parse_stat(b"2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 3 0 0")
    assert st.is_kernel_thread


# /proc/PID/stat only: the system-wide /proc/stat beside them is another file
@pytest.mark.parametrize("path", [p for p in realproc_files("stat") if p.parent.name.isdigit()], ids=str)
def test_stat_reads_every_recorded_kernel(path):
    st = parse_stat(path.read_bytes())
    if "semi-synthetic" not in path.parts[-4] and "prometheus" not in str(path):
        assert st.pid == int(path.parent.name)
    assert st.pid > 0
    assert st.comm and st.state
    # PF_KTHREAD (2.6.27+) marks kthreadd (pid 2, parent 0) and the threads it starts, nothing else
    kthreadd = (st.pid, st.ppid) == (2, 0)
    if st.is_kernel_thread:
        assert kthreadd or st.ppid == 2, st
    if kthreadd:
        assert st.comm == "kthreadd" and st.is_kernel_thread, st
    if st.pid == 1:
        assert not st.is_kernel_thread, st
    assert st.minflt is None or st.minflt >= 0


def test_statm_reads_every_recorded_kernel():
    """Every recorded statm, in one test (200 of them: a test each would cost more than the reads):
    seven counts, shared no more than resident where both are known.  One recording's shared is
    2**64-1, which no machine has: None, not a count."""
    paths = [p for p in realproc_files("statm") if p.parent.name.isdigit()]
    if not paths:
        pytest.skip("no recorded /proc (../shared/realproc)")
    absurd = 0
    for path in paths:
        statm = parse_statm(path.read_bytes())
        assert statm.resident is not None and statm.size is not None, path
        if statm.shared is None:
            absurd += 1
        elif statm.anonymous is None:
            assert statm.shared > statm.resident, path
    assert absurd <= 1


def test_vmstat_reads_every_recorded_kernel():
    paths = realproc_files("vmstat")
    if not paths:
        pytest.skip("no recorded /proc (../shared/realproc)")
    for path in paths:
        counters = parse_vmstat(path.read_bytes())
        assert counters and all(isinstance(v, int) and v >= 0 for v in counters.values()), path
        assert "pgfault" in counters or "nr_free_pages" in counters, path


def test_vmstat_damaged():
    assert parse_vmstat(b"pswpout 12\npgsteal_kswapd 3\nnew_counter 7\n") == \
        {"pswpout": 12, "pgsteal_kswapd": 3, "new_counter": 7}  # (unknown names pass through)
    assert parse_vmstat(b"pswpout -1\nx\npgfault 99999999999999999999999\n\nok 1") == {"ok": 1}


def test_statm_damaged():
    assert parse_statm(b"338 68 56 82 0 169 0\n") == (338, 68, 56, 82, 169)
    assert parse_statm(b"338 68 56 82 0 169 0").anonymous == 12
    assert parse_statm(b"338 68 x 82 0 -169 0") == (338, 68, None, 82, None)
    assert parse_statm(b"338 68 99999999999999999999999 82 0 169 0").anonymous is None
    assert parse_statm(b"3 2 5 1 0 1 0").anonymous is None  # (more shared than resident: no sense)
    for damaged in (b"", b"338 68 56", b"1 2 3 4 5 6 7 8"):
        with pytest.raises(ValueError):
            parse_statm(damaged)


@pytest.mark.parametrize("path", [p for p in realproc_files("maps") if p.parent.name.isdigit()], ids=str)
def test_maps_objects_of_every_recorded_process(path):
    """Each (device, inode) of a mapped object, with the KiB of every line mapping it; no
    anonymous line (inode 0)."""
    data = path.read_bytes()
    objects = parse_maps_objects(data)
    expected = {}
    for line in data.decode("utf-8", "surrogateescape").splitlines():
        fields = line.split(None, 5)
        if len(fields) >= 5 and fields[4] != "0":
            start, end = (int(x, 16) for x in fields[0].split("-"))
            key = (fields[3].encode(), fields[4].encode())
            expected[key] = expected.get(key, 0) + (end - start) // 1024
    assert objects == expected
    assert all(inode != b"0" for _, inode in objects)
    if path.parent.name == "26232" and "prometheus" in str(path):  # /bin/cat: two lines, 8 + 4 KiB
        assert objects[(b"fd:01", b"47316994")] == 12


def test_cmdline():
    assert parse_cmdline(b"sleep\x0060\x00") == "sleep 60"
    assert parse_cmdline(b"sshd: root@pts/0") == "sshd: root@pts/0"  # rewritten, no final NUL: keep every byte
    assert parse_cmdline(b"") == ""
    assert parse_cmdline(b"a\xff\x00").encode("utf-8", "surrogateescape") == b"a\xff"
    assert parse_cmdline(b"postgres: checkpointer \x00\x00\x00\x00") == "postgres: checkpointer "  # NUL padding


@pytest.mark.parametrize("path", realproc_files("cmdline"), ids=str)
def test_cmdline_reads_every_recorded_kernel(path):
    data = path.read_bytes()
    text = parse_cmdline(data)
    assert "\0" not in text
    assert len(text.encode("utf-8", "surrogateescape")) == len(data.rstrip(b"\0"))  # padding dropped


@pytest.mark.parametrize("path", realproc_files("status"), ids=str)
def test_status_reads_every_recorded_kernel(path):
    fields = parse_status(path.read_bytes())
    assert "Name" in fields
    uid = status_ids(fields, "Uid")
    if uid is not None:
        assert len(uid) == 4
    ppid = re.search(rb"^PPid:\s+(\d+)", path.read_bytes(), re.M)
    if ppid:
        assert status_int(fields, "PPid") == int(ppid.group(1))


def test_passwd():
    names = parse_passwd(b"root:x:0:0:root:/root:/bin/sh\n# comment\nbroken\ntoor:x:0:0::/:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n")
    assert names == {0: "root", 65534: "nobody"}


@pytest.mark.parametrize("path", realproc_files("cgroup"), ids=str)
def test_cgroup_reads_every_recorded_kernel(path):
    from smem.parsers.cgroup import parse_cgroup
    data = path.read_bytes()
    parsed = parse_cgroup(data)
    if data.strip():
        assert parsed is not None and parsed.startswith("/")
        memory = [l.split(b":", 2)[2] for l in data.splitlines() if b"memory" in l.split(b":")[1].split(b",")]
        if memory:
            assert parsed.encode() == memory[0]


def test_cgroup_v2_hybrid_and_container_ids():
    from smem.parsers.cgroup import cgroup_label, parse_cgroup
    assert parse_cgroup(b"0::/system.slice/nginx.service\n") == "/system.slice/nginx.service"
    hybrid = b"4:memory:/user.slice/user-1000.slice\n1:name=systemd:/user.slice\n0::/\n"
    assert parse_cgroup(hybrid) == "/user.slice/user-1000.slice"
    assert parse_cgroup(b"") is None
    docker = "/system.slice/docker-" + "0123456789ab" + "c" * 52 + ".scope"
    assert cgroup_label(docker) == "/system.slice/docker-0123456789ab.scope"


def test_cgroup_path_with_line_separators_is_whole():
    """A cgroup's name may hold any byte but "/" and a newline, and the file does not escape it:
    only a newline ends a line.  A name with a carriage return (or \\x1c, \\x85, U+2028) that
    spells another line named a cgroup of the user's choosing, and cut its own name there."""
    from smem.parsers.cgroup import cgroup_v2_path, parse_cgroup
    spoof = "4:memory:/user\r4:memory:/system.slice/sshd.service\n".encode()
    assert parse_cgroup(spoof) == "/user\r4:memory:/system.slice/sshd.service"
    for separator in ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"):
        line = f"0::/user.slice/a{separator}0::/system.slice\n".encode()
        assert parse_cgroup(line) == f"/user.slice/a{separator}0::/system.slice", repr(separator)
        assert cgroup_v2_path(line) == f"/user.slice/a{separator}0::/system.slice", repr(separator)


def test_swap_devices_are_named_without_their_directory():
    from smem.parsers.swaps import parse_swap_devices
    # as this machine's kernel wrote it with the zram device of test_breakdown swapped on
    recorded = (b"Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
                b"/dev/zram0                              partition\t65532\t\t1024\t\t32767\n"
                b"/var/swap\\040file                       file\t\t1048572\t\t0\t\t-2\n")
    assert parse_swap_devices(recorded) == {"zram0", "swap\\040file"}
    with open("/proc/swaps", "rb") as f:  # and whatever this machine has now
        assert all("/" not in name for name in parse_swap_devices(f.read()))
