"""The system view (-w) and device sizing, through the command line."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import FIXTURES, run_smem
from elf_files import berkeley_size
from real_kernel import extract_vmlinux, real_vmlinuz

VM = "vm-6.18-x86_64"


def _tree(tmp_path, iomem=True, memmap=True, dmesg=False):
    """A capture directory from files recorded on one machine in one boot."""
    proc = tmp_path / "tree" / "proc"
    proc.mkdir(parents=True)
    shutil.copy(FIXTURES / "iomem" / f"{VM}.meminfo", proc / "meminfo")
    if iomem:
        shutil.copy(FIXTURES / "iomem" / f"{VM}.root", proc / "iomem")
    if memmap:
        shutil.copytree(FIXTURES / "memmap" / VM, proc / "sys" / "firmware" / "memmap")
    if dmesg:
        shutil.copy(FIXTURES / "boot_memory_line" / f"{VM}.dmesg", proc / "dmesg")
    return proc.parent


def _areas(stdout):
    """{area: [the numbers of its row]} and all the lines."""
    lines = stdout.decode().splitlines()
    areas = {}
    for l in lines[1:6]:
        numbers = []
        for token in l[24:].split():
            if not token.isdigit():
                break
            numbers.append(int(token))
        areas[l[:24].strip()] = numbers
    return areas, lines


def _ram_kib_from_memmap():
    total = 0
    for entry in (FIXTURES / "memmap" / VM).iterdir():
        if (entry / "type").read_text().strip() == "System RAM":
            total += int((entry / "end").read_text(), 16) - int((entry / "start").read_text(), 16) + 1
    return total // 1024


def _iomem_kernel_kib():
    total = 0
    for line in (FIXTURES / "iomem" / f"{VM}.root").read_text().splitlines():
        span, _, name = line.strip().partition(" : ")
        if name in ("Kernel code", "Kernel rodata", "Kernel data", "Kernel bss"):
            a, b = span.split("-")
            total += int(b, 16) - int(a, 16) + 1
    return total // 1024


def test_without_flags_ram_and_kernel_come_from_memmap_and_iomem(tmp_path):
    proc = run_smem("-S", _tree(tmp_path), "-w", "-t")
    assert proc.returncode == 0, proc.stderr
    areas, lines = _areas(proc.stdout)
    ram, kernel = _ram_kib_from_memmap(), _iomem_kernel_kib()
    mem_total = int((FIXTURES / "iomem" / f"{VM}.meminfo").read_text().split()[1])
    assert areas["kernel image"][0] == kernel
    assert areas["firmware/hardware"][0] == ram - mem_total - kernel > 0
    assert sum(a[0] for a in areas.values()) == ram == int(lines[7].split()[0])  # exactly, in integers
    assert lines[8:] == ["firmware/hardware: installed RAM 24.0G from /sys/firmware/memmap",
                         "kernel image: from /proc/iomem"]


def test_iomem_alone_and_the_boot_line_estimate(tmp_path):
    areas, lines = _areas(run_smem("-S", _tree(tmp_path, memmap=False), "-w").stdout)
    assert "installed RAM" in lines[6] and lines[6].endswith("from /proc/iomem")
    boot = _tree(tmp_path / "b", iomem=False, memmap=False, dmesg=True)
    proc = run_smem("-S", boot, "-w", "-c", "area used source")
    areas, lines = _areas(proc.stdout)
    # the boot line of the same boot: code + rwdata + rodata + bss, in KiB
    log = (FIXTURES / "boot_memory_line" / f"{VM}.dmesg").read_text()
    parts = re.search(r"\((\d+)K kernel code, (\d+)K rwdata, (\d+)K rodata, \d+K init, (\d+)K bss", log).groups()
    assert areas["kernel image"][0] == sum(map(int, parts))
    assert "boot log (estimate)" in lines[2]
    assert lines[-1] == "kernel image: estimated from boot log"


@pytest.mark.uses("cpu")
def test_with_the_inputs_smem15_had_the_table_is_smem15s(tmp_path):
    bare = _tree(tmp_path, iomem=False, memmap=False)
    for args in (["-w"], ["-w", "-t", "-k"], ["-w", "-p"], ["-w", "-c", "order area used", "-s", "used", "-r"]):
        ours = run_smem("-S", bare, *args)
        # stdout is smem 1.5's; stderr says the two zeros are unknown, not nothing (one line)
        assert ours.returncode == 0 and ours.stderr.decode().count("\n") == 1
        assert "says neither the installed RAM nor the kernel image's size" in ours.stderr.decode()
        if os.path.exists("/usr/bin/smem"):
            theirs = subprocess.run(["/usr/bin/smem", "-S", bare, *args], capture_output=True, stdin=subprocess.DEVNULL)
            assert ours.stdout == theirs.stdout, args
        assert "from" not in ours.stdout.decode()  # no footnote: nothing smem 1.5 lacked was used


def _numbers(stdout):
    """The figures of each row (not the footnotes, which hold no figures in columns)."""
    return [[float(v) for v in l[24:].split()] for l in stdout.decode().splitlines()[1:]
            if not l.startswith("-") and ": " not in l]


@pytest.mark.uses("cpu")
@pytest.mark.skipif(not (os.path.exists("/usr/bin/smem") and shutil.which("size") and shutil.which("gcc")),
                    reason="smem 1.5, size and gcc are needed")
def test_with_R_and_K_it_is_smem15_without_the_floats(tmp_path):
    src = tmp_path / "k.c"
    src.write_text("int big[50000]; int data[3000] = {1}; int main(void) { return big[1] + data[2]; }\n")
    elf = tmp_path / "k.elf"
    subprocess.run(["gcc", "-O0", "-o", elf, src], check=True)
    tree = _tree(tmp_path, iomem=True, memmap=True)
    for args in (["-w", "-R", "24G", "-K", str(elf)], ["-w", "-t", "-R", "25G", "-K", str(elf)]):
        ours = run_smem("-S", tree, *args)
        theirs = subprocess.run(["/usr/bin/smem", "-S", tree, *args], capture_output=True, stdin=subprocess.DEVNULL)
        assert ours.returncode == 0, ours.stderr
        # smem 1.5 prints -R/-K figures as floats ("482031.2099609375") that overflow their
        # columns; ours are whole KiB (the kernel rounded down), every other figure identical
        table, _, note = ours.stdout.partition(b"\nkernel image: from -K ")  # a footnote names the image
        assert b"." in theirs.stdout and b"." not in table and note.startswith(bytes(elf))
        assert ours.stdout.splitlines()[0] == theirs.stdout.splitlines()[0]
        for a, b in zip(_numbers(ours.stdout), _numbers(theirs.stdout), strict=True):
            assert all(abs(x - y) < 1 for x, y in zip(a, b, strict=True)), (a, b)
    areas, _ = _areas(run_smem("-S", tree, "-w", "-K", elf).stdout)
    assert areas["kernel image"][0] == berkeley_size(elf)[3] // 1024


@pytest.mark.uses("cpu")
def test_real_distribution_kernel_through_the_cli(tmp_path):
    vmlinuz = real_vmlinuz(tmp_path)
    if vmlinuz is None or not shutil.which("size"):
        pytest.skip("no distribution kernel (tests/fetch_kernel.sh) or no size")
    vmlinux = extract_vmlinux(vmlinuz.read_bytes(), tmp_path)
    assert vmlinux is not None
    proc = run_smem("-w", "-K", vmlinuz, "-c", "area used source")
    assert proc.returncode == 0, proc.stderr
    areas, lines = _areas(proc.stdout)
    kernel_line = next(l for l in lines if l.startswith("kernel image"))
    assert int(kernel_line.split()[2]) == berkeley_size(vmlinux)[3] // 1024
    assert f"-K {vmlinuz} (bzImage" in kernel_line


def test_recommendation(tmp_path):
    tree = _tree(tmp_path)
    proc = run_smem("-S", tree, "-w", "--recommend")
    areas, lines = _areas(proc.stdout)
    need = sum(a[2] for a in areas.values())
    # (the tree does not say its arch: the page map in the firmware row stays as measured)
    m = re.fullmatch(r"needs (\S+) non-reclaimable; fits in (\S+); page map not scaled to the size \(the arch unknown\)",
                     lines[-1])
    assert m, lines[-1]
    totals = run_smem("-S", tree, "-w", "-H", "-k", "-t", "-c", "noncache").stdout.decode().splitlines()
    assert m.group(1) == totals[totals.index("-" * len(totals[0])) + 1].strip()
    fits = m.group(2)
    value = float(fits[:-1]) * {"M": 1 << 10, "G": 1 << 20}[fits[-1]]
    assert value >= need and value / 2 < need * 1.5  # the smallest usual size above the need
    more = run_smem("-S", tree, "-w", "--recommend", "300").stdout.decode().splitlines()[-1]
    assert "(+300% headroom" in more
    # a percentage written as one (the line itself says "+20%"): refused before, "not '20%'"
    assert run_smem("-S", tree, "-w", "--recommend", "300%").stdout.decode().splitlines()[-1] == more
    assert run_smem("-S", tree, "-w", "--recommend", "%").returncode == 2
    bad = run_smem("--recommend", "5")
    assert bad.returncode == 2 and b"-w" in bad.stderr


def test_the_recommendation_is_in_every_format(tmp_path):
    """--recommend's answer is the last line under the table, JSON's ``recommend`` object and two
    OpenMetrics gauges with the same figures; CSV, whose rows are the areas, keeps them as they are
    without it and says it on standard error (it printed the rows and nothing else, exit 0)."""
    import json
    tree = _tree(tmp_path)
    line = run_smem("-S", tree, "-w", "--recommend", "10").stdout.decode().splitlines()[-1]
    m = re.fullmatch(r"needs (\S+) non-reclaimable \(\+10% headroom: (\S+)\); fits in (\S+); page map not scaled "
                     r"to the size \(the arch unknown\)", line)
    assert m, line
    document = json.loads(run_smem("-S", tree, "-w", "--recommend", "10", "-F", "json").stdout)
    figures = document["recommend"]
    needs = sum(row["noncache"] for row in document["rows"])
    assert figures == {"needs_kib": needs, "headroom_percent": 10.0, "with_headroom_kib": needs + needs // 10,
                       "fits_in_kib": figures["fits_in_kib"], "free_not_counted_kib": None,  # (no zoneinfo)
                       "page_map_kib": None, "measured_page_map_kib": None, "page_map_not_scaled": "the arch unknown",
                       "not_counted": []}
    assert figures["with_headroom_kib"] <= figures["fits_in_kib"] < 2 * figures["with_headroom_kib"]
    assert document["notes"][-1] == line
    shown = run_smem("-S", tree, "-w", "--recommend", "10", "-H", "-F", "json").stdout
    assert [json.loads(shown)["recommend"][k] for k in ("needs_kib", "with_headroom_kib", "fits_in_kib")] == \
        [figures[k] for k in ("needs_kib", "with_headroom_kib", "fits_in_kib")]  # figures, whatever -H shows
    metrics = run_smem("-S", tree, "-w", "--recommend", "10", "-F", "openmetrics").stdout.decode().splitlines()
    assert f"smem_non_reclaimable_bytes {needs * 1024}" in metrics
    assert f"smem_recommended_ram_bytes {figures['fits_in_kib'] * 1024}" in metrics
    plain = run_smem("-S", tree, "-w", "-F", "csv")
    assert "smem_recommended_ram_bytes" not in run_smem("-S", tree, "-w", "-F", "openmetrics").stdout.decode()
    csv = run_smem("-S", tree, "-w", "--recommend", "10", "-F", "csv")
    assert csv.returncode == 0 and csv.stdout == plain.stdout
    assert csv.stderr.decode() == f"smem: {line}\n"
    assert plain.stderr == b""
    watched = run_smem("-w", "--recommend", "--interval", "1", "--count", "2")  # (a watched table has no notes)
    assert (watched.returncode, watched.stdout) == (2, b"")
    assert watched.stderr.decode() == "smem: --recommend sizes RAM from one reading: not with --interval\n"
    recording = tmp_path / "recording"  # (what makes a directory a recording to play back)
    recording.mkdir()
    (recording / "index.jsonl").touch()
    for playback in (["--all-frames"], ["--speed", "2"]):  # the message names what the user asked for
        played = run_smem("-S", recording, *playback, "-w", "--recommend")
        assert (played.returncode, played.stdout) == (2, b"")
        assert played.stderr.decode() == f"smem: --recommend sizes RAM from one reading: not with {playback[0]}\n"


def test_the_recommendation_leaves_out_the_free_pages_of_the_per_cpu_lists(tmp_path):
    """-w's kernel dynamic memory (MemTotal - MemFree - userspace) holds the free pages the
    per-CPU lists keep, as not reclaimable: hundreds of MiB on a machine just busy, so the answer
    moved with them.  The need leaves them out and says how much."""
    import json
    from smem.parsers.zoneinfo import per_cpu_free_pages
    tree = _tree(tmp_path)
    zoneinfo = open("/proc/zoneinfo", "rb").read()  # (this machine's: real pagesets)
    (tree / "proc" / "zoneinfo").write_bytes(zoneinfo)
    (tree / "proc" / "capture-info").write_bytes(b"pagesize=4096\n")
    document = json.loads(run_smem("-S", tree, "-w", "--recommend", "-F", "json").stdout)
    noncache = sum(row["noncache"] for row in document["rows"])
    # (at most kernel dynamic memory's noncache: the next test; the lists of a machine under load
    # can hold more than the recorded tree's row)
    kernel = next(row["noncache"] for row in document["rows"] if row["area"] == "kernel dynamic memory")
    free = min(per_cpu_free_pages(zoneinfo) * 4, kernel)
    assert document["recommend"]["free_not_counted_kib"] == free
    assert document["recommend"]["needs_kib"] == max(noncache - free, 0)
    line = run_smem("-S", tree, "-w", "--recommend").stdout.decode().splitlines()[-1]
    if free:
        assert "(free pages in per-CPU lists, " in line and ", not counted); fits in " in line, line


def test_the_free_pages_left_out_are_at_most_kernel_dynamic_memorys_noncache(tmp_path):
    """zoneinfo is read at another moment than meminfo: where its per-CPU lists hold more than
    kernel dynamic memory's noncache, the rest did not come off that row, and taking it off the
    sum took it off firmware's, the kernel image's and userspace's need."""
    import json
    import re
    tree = _tree(tmp_path)
    (tree / "proc" / "capture-info").write_bytes(b"pagesize=4096\n")
    rows = {r["area"]: r for r in json.loads(run_smem("-S", tree, "-w", "-F", "json").stdout)["rows"]}
    kernel = rows["kernel dynamic memory"]["noncache"]
    # this machine's zoneinfo, each per-CPU count set so that they hold 100 MiB more than that row
    zoneinfo = open("/proc/zoneinfo", "rb").read()
    counts = len(re.findall(rb"^\s+count:", zoneinfo, re.M))
    each = (kernel + 102400) // 4 // counts + 1
    (tree / "proc" / "zoneinfo").write_bytes(re.sub(rb"(?m)^(\s+count:)\s*\d+", rb"\g<1> %d" % each, zoneinfo))
    figures = json.loads(run_smem("-S", tree, "-w", "--recommend", "-F", "json").stdout)["recommend"]
    assert figures["free_not_counted_kib"] == kernel
    assert figures["needs_kib"] == sum(r["noncache"] for r in rows.values()) - kernel > 0


def test_the_breakdown_recommends_with_the_firmwares_and_kernel_images_ram(tmp_path):
    """--breakdown's rows add up to MemTotal, which leaves out what firmware keeps and the kernel
    image: with --recommend they are its first rows, as -R or -K make them, and in its need (its
    answer was a fifth of -w's on a machine of 24 GiB whose firmware keeps 438 MiB)."""
    import json
    tree = _tree(tmp_path)
    document = json.loads(run_smem("-S", tree, "-w", "--breakdown", "--recommend", "-F", "json").stdout)
    rows = {row["area"]: row for row in document["rows"]}
    from smem.parsers.meminfo import parse_meminfo
    mem_total = parse_meminfo((tree / "proc" / "meminfo").read_bytes()).kib["MemTotal"]
    assert rows["firmware/hardware"]["noncache"] == _ram_kib_from_memmap() - mem_total - _iomem_kernel_kib() > 0
    assert rows["kernel image"]["noncache"] == _iomem_kernel_kib()
    assert document["recommend"]["needs_kib"] == sum(r["noncache"] for r in document["rows"] if r["noncache"] is not None)
    plain = json.loads(run_smem("-S", tree, "-w", "--breakdown", "-F", "json").stdout)
    assert "firmware/hardware" not in {row["area"] for row in plain["rows"]}  # (only -R, -K, --recommend)


def test_kernel_file_errors_are_one_line(tmp_path):
    junk = tmp_path / "junk"
    junk.write_bytes(os.urandom(10000))
    for path, text in ((junk, "not an ELF vmlinux"), (tmp_path / "missing", "No such file")):
        proc = run_smem("-w", "-K", path)
        err = proc.stderr.decode()
        assert proc.returncode == 1 and text in err and err.count("\n") == 1, err
        assert str(path) in err  # the file as given, whole


def test_the_kernel_image_given_is_named_under_the_table(tmp_path):
    """smem 1.5's -K figure was a float, so the table differs anyway: the footnote names the image."""
    proc = run_smem("-S", _tree(tmp_path), "-w", "-K", sys.executable)
    assert proc.returncode == 0, proc.stderr
    (note,) = [l for l in proc.stdout.decode().splitlines() if l.startswith("kernel image: ")]
    assert note.startswith(f"kernel image: from -K {sys.executable} (ELF")


def test_realmem_below_memtotal_is_warned_about(tmp_path):
    proc = run_smem("-S", _tree(tmp_path), "-w", "-R", "1G")
    assert proc.returncode == 0
    assert "-R 1.0G (1048576 KiB) is less than the memory the kernel manages" in proc.stderr.decode()
    areas, _ = _areas(proc.stdout)
    assert areas["firmware/hardware"][0] == 0
    assert re.search(r"\(MemTotal \d+ KiB\)", proc.stderr.decode())  # in the table's unit
    human = run_smem("-S", _tree(tmp_path / "k"), "-w", "-R", "1G", "-k").stderr.decode()
    assert re.search(r"\(MemTotal \d+\.\dG\)", human), human  # -k: the warning's amounts too


@pytest.mark.uses("cpu")
@pytest.mark.process
def test_live_kernel_image_unknown_without_root_says_why():
    if os.geteuid() != 0:
        pytest.skip("needs root to become another user")
    from conftest import AS_NOBODY
    code = AS_NOBODY + "smem.cli.main(['-w'])"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          cwd=os.path.dirname(os.path.dirname(__file__)))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().splitlines()
    kernel = next(l for l in lines if l.startswith("kernel image "))
    if int(kernel.split()[2]) == 0:  # no iomem, no readable boot log as nobody
        assert any(l.startswith("kernel image: unknown (/proc/iomem hides it") for l in lines)
    else:
        assert any(l.startswith("kernel image: estimated from boot log") for l in lines)


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_an_elf_that_is_no_kernel_is_sized_with_a_warning(tmp_path, compressed):
    """Python's own ELF, as it is or gzipped as a vmlinuz is (which was sized without a word)."""
    import gzip
    image = sys.executable
    if compressed:
        image = tmp_path / "python.gz"
        with open(sys.executable, "rb") as f:
            image.write_bytes(gzip.compress(f.read()))
    proc = run_smem("-S", _tree(tmp_path), "-w", "-K", image)
    assert proc.returncode == 0
    assert "not a Linux kernel" in proc.stderr.decode()


def test_absurd_inputs_are_errors_not_hangs(tmp_path):
    tree = _tree(tmp_path)
    for args, code, text in ((["--recommend", "inf"], 2, "--recommend"), (["--recommend", "nan"], 2, "nan"),
                             (["-K", "/dev/zero"], 1, "not a kernel image")):
        proc = run_smem("-S", tree, "-w", *args)
        err = proc.stderr.decode()
        assert proc.returncode == code and text in err and err.count("\n") == 1, (args, err)


@pytest.mark.parametrize("selection", [("--pid", "2084"), ("-P", "surfaceflinger"), ("-U", "system"), ("-M", "libc")])
def test_a_selection_with_plain_system_view_is_refused(realproc, selection):
    """Plain -w reads no process: --pid (of a process the tree holds) was 'not found', exit 1;
    then it, -P, -U and -M were taken and selected nothing, the report the same as without them
    (a script read it as the memory of what it asked for). A usage line now; with --breakdown,
    which reads the processes, they select."""
    tree = realproc / "android-pixel3-4.9-systemui"
    proc = run_smem("-S", tree, "-w", *selection)
    assert proc.returncode == 2 and proc.stdout == b"", proc
    assert proc.stderr.decode() == (f"smem: -w reads no process: {selection[0]} would select nothing in it "
                                    "(-w --breakdown, which splits the processes' memory, takes them)\n")
    assert run_smem("-S", tree, "-w", "--breakdown", *selection).returncode == 0
    # --breakdown reads the processes: a pid it lacks is still an error
    assert run_smem("-S", tree, "-w", "--breakdown", "--pid", "999").returncode == 1
