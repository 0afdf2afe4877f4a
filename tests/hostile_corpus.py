"""The hostile corpus: :func:`make_cases` makes, from the building blocks of hostile_inputs.py,
the few hundred (name, case) pairs the corpus test (tests/test_hostile.py) runs smem on: every
kind of archive intact, cut and damaged, bombs, absurd files and options (hostile_runner.py runs them).
"""

import gzip
import io
import os
import random
import re
import stat
import tarfile

from hostile_inputs import (CMDLINE, KINDS, MEMINFO, SMAPS, STAT, STATUS, bzimage_header, capture_members,
                            capture_tar, compress, elf_header, exact_capture, frames_member, header,
                            kpages_member, one_stream, process_files, tar_of, u64, without_end,
                            xz_with_dictionary, zeros_stream, zstd_with_window)


#: Views and formats the capture cases cycle through, so every kind of input meets each.
VIEWS = ([], ["-u"], ["-m"], ["-w"], ["-t", "-k", "-p"], ["-F", "json"], ["-F", "csv"], ["-F", "openmetrics"],
         ["--cgroup"], ["-g"], ["-w", "-t", "-k", "-p"], ["-c", "pid name command vss rss pss uss swap"],
         ["-m", "-t", "-p"], ["-u", "-F", "json"], ["-g", "-k", "-t"], ["-u", "-p", "-t"], ["--exact", "-u"],
         ["-F", "markdown"])
#: Charts cost a few tenths of a second each: these inputs are drawn too (every one of them is also
#: run through the views above).
CHARTED = ("smaps", "meminfo", "cmdline", "stat")


DRM_FDINFO = (b"pos:\t0\nflags:\t02100002\nmnt_id:\t24\nino:\t1204\ndrm-driver:\tamdgpu\ndrm-client-id:\t30\n"
              b"drm-pdev:\t0000:04:00.0\ndrm-total-vram:\t544428 KiB\ndrm-shared-vram:\t13584 KiB\n"
              b"drm-resident-vram:\t544428 KiB\ndrm-memory-gtt: \t22528 KiB\ndrm-engine-gfx:\t39456116802 ns\n")
DMABUF_MAPPING = (b"7f0000000000-7f0000004000 rw-s 00000000 00:0d 180                        /dmabuf:drm\n"
                  b"Size:                 16 kB\nRss:                   0 kB\nPss:                   0 kB\n")
DMABUF_FDINFO = b"pos:\t0\nflags:\t02000000\nmnt_id:\t10\nino:\t180\nsize:\t16384\ncount:\t10\nexp_name:\tdrm\n"


def _garbage(seed, n):
    return random.Random(seed).randbytes(n)


def _field_variants(original):
    """Hostile versions of one /proc file's content."""
    huge = str(2 ** 70).encode()
    digits = b"9" * 5000
    return {
        "empty": b"",
        "garbage": _garbage(len(original), 3000),
        "nuls": original.replace(b" ", b"\0").replace(b"\n", b"\0"),
        "control": original.replace(b"d", b"\x1b[2J\x07\r").replace(b":", b":\x08"),
        "non-utf8": original.replace(b"b", b"\xff\xfe\xc3"),
        "huge numbers": re.sub(rb"(?<![0-9a-f])[0-9]+(?= kB|\b)", huge, original),
        "5000 digits": re.sub(rb"(?<![0-9a-f])[0-9]+(?= kB|\b)", digits, original),
        "negative": re.sub(rb"(?<![0-9a-f-])([0-9]+)(?= kB|\b)", rb"-\1", original),
        "long line": original.rstrip(b"\n") + b"x" * 200000 + b"\n",
        "cut": original[:len(original) // 2],
    }


_FILES = {  # capture file -> (content, where it goes: a process file or a system file)
    "smaps": (SMAPS, "process"), "smaps_rollup": (
        b"00400000-7fff0000 ---p 00000000 00:00 0 [rollup]\nRss: 304 kB\nPss: 154 kB\nPss_Anon: 4 kB\n"
        b"Pss_File: 150 kB\nPss_Shmem: 0 kB\nPrivate_Clean: 0 kB\nPrivate_Dirty: 4 kB\nSwap: 0 kB\n", "process"),
    "stat": (STAT, "process"), "status": (STATUS + b"VmRSS:\t304 kB\nRssAnon:\t4 kB\nThreads:\t1\n", "process"),
    "cmdline": (CMDLINE, "process"), "cgroup": (b"0::/system.slice/dbus.service\n", "process"),
    "meminfo": (MEMINFO, "system"), "capture-info": (b"hostname=box\npagesize=4096\nkernel=6.1.0\n", "system"),
    "passwd": (b"alice:x:1000:1000::/home/alice:/bin/sh\n", "system"),
    "version": (b"Linux version 6.1.0-13-amd64 (gcc) #1 SMP\n", "system"),
    "iomem": (b"00001000-0009ffff : System RAM\n00100000-7fffffff : System RAM\n  01000000-01ffffff : Kernel code\n",
              "system"),
    "dmesg": (b"[    0.0] Memory: 2000000K/2097152K available (16384K kernel code, 4096K rwdata, 8192K rodata)\n",
              "system"),
    "config.gz": (gzip.compress(b"CONFIG_MMU=y\n# CONFIG_NO_PAGE_MAPCOUNT is not set\n", mtime=0), "system"),
    "pressure/memory": (b"some avg10=99.47 avg60=99.37 avg300=99.37 total=8917504840\n"
                        b"full avg10=86.55 avg60=87.90 avg300=91.54 total=8171112563\n", "system"),
    "sys/fs/cgroup/system.slice/dbus.service/memory.pressure": (
        b"some avg10=70.24 avg60=68.52 avg300=69.91 total=3559632828\n"
        b"full avg10=57.59 avg60=58.06 avg300=60.38 total=3300487258\n", "system"),
}


def _with_file(name, content):
    """A capture whose file ``name`` holds ``content`` (the rest as in a good capture)."""
    files = process_files()
    files.update({k: v for k, (v, where) in _FILES.items() if where == "process"})
    system = {k: v for k, (v, where) in _FILES.items() if where == "system"}
    if _FILES[name][1] == "process":
        files[name] = content
    else:
        system[name] = content
    members = [(k, v) for k, v in system.items()]
    members.append(("1234", None, {"uid": 1000, "uname": "alice"}))
    members.extend((f"1234/{k}", v) for k, v in files.items())
    members.append(("1235", None, {"uid": 0}))
    members.extend((f"1235/{k}", v) for k, v in process_files(1235).items())
    return tar_of(members)


def _tar_oddities():
    """Archives whose structure is odd: links, devices, paths, sizes, extension headers."""
    good = capture_members()

    def with_extra(*extra, replace_meminfo=None):
        members = list(good)
        if replace_meminfo is not None:
            members[0] = replace_meminfo
        return tar_of(members + list(extra))

    body = without_end(capture_tar())
    odd = {
        "symlink meminfo": with_extra(replace_meminfo=("meminfo", b"", {"type": tarfile.SYMTYPE,
                                                                        "linkname": "/etc/shadow"})),
        "hardlink smaps": with_extra(("1234/smaps_rollup", b"", {"type": tarfile.LNKTYPE, "linkname": "/etc/shadow"})),
        "char device": with_extra(("1234/status", b"", {"type": tarfile.CHRTYPE, "devmajor": 1, "devminor": 5})),
        "block device": with_extra(("1234/cgroup", b"", {"type": tarfile.BLKTYPE, "devmajor": 8})),
        "fifo member": with_extra(("1234/cgroup", b"", {"type": tarfile.FIFOTYPE})),
        "absolute path": with_extra(("/1234/smaps", SMAPS), ("/meminfo", MEMINFO)),
        "dot dot": with_extra(("../1234/smaps", SMAPS), ("1234/../../etc/meminfo", MEMINFO)),
        "backslash": with_extra(("1234\\smaps", SMAPS)),
        "directory meminfo": tar_of([("meminfo", None)] + good[1:]),
        "no meminfo": tar_of(good[1:]),
        "duplicate members": with_extra(*good),
        "superscript pid": with_extra(("²", None), ("²/smaps", SMAPS), ("³/stat", STAT)),
        "arabic pid": with_extra(("١٢", None), ("١٢/smaps", SMAPS)),
        "5000-digit pid": with_extra(("9" * 5000 + "/smaps", SMAPS)),
        "proc prefix": tar_of([("proc/" + m[0],) + tuple(m[1:]) for m in good]),
        "dot slash": tar_of([("./" + m[0],) + tuple(m[1:]) for m in good]),
        "pax path": tar_of_format(good + [("1236/smaps", SMAPS)], tarfile.PAX_FORMAT, {"comment": "x" * 300}),
        "pax huge size": body + header(b"PaxHeader/x", 3 << 30, kind=b"x") + bytes(1024),
        "pax bad record": body + header(b"PaxHeader/x", 20, kind=b"x") + b"99999999 path=a\n".ljust(512, b"\0"),
        "gnu longname": body + header(b"././@LongLink", 2000, kind=b"L") + b"a" * 2000 + bytes(48)
                        + header(b"x", 3, kind=b"0") + b"abc".ljust(512, b"\0"),
        "gnu longname huge": body + header(b"././@LongLink", 3 << 30, kind=b"L") + bytes(1024),
        "base-256 size": body + header(b"1234/smaps", 1 << 70) + bytes(1024),
        "size past the end": body + header(b"1234/smaps", 100000) + b"x" * 1000,
        "sparse member": body + header(b"1234/smaps", 100, kind=b"S") + bytes(1024),
        "unknown type": body + header(b"1234/smaps", 10, kind=b"Z") + bytes(1024),
        "bad checksum": body[:-512] + body[-512:-512 + 148] + b"0000001\0" + body[-512 + 156:],
        "garbage header": body + _garbage(1, 512) + bytes(1024),
        "only end blocks": bytes(10240),
        "empty": b"",
        "one byte": b"x",
        "half a header": body[:256],
        "text": MEMINFO * 20,
        "random": _garbage(2, 20000),
        "no end blocks": body,
        "garbage after end": capture_tar() + b"garbage",
        "nul names": with_extra(("1234/sm\0aps", SMAPS)),
        "long member names": with_extra(("1234/" + "x" * 300, b"x")),
        "thousands of members": tar_of(good + [(f"{p}/stat", STAT) for p in range(2000, 4000)]),
    }
    return odd


def tar_of_format(members, fmt, pax_headers=None):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=fmt, pax_headers=pax_headers) as tar:
        for entry in members:
            name, data = entry[0], entry[1]
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
            else:
                info.size = len(data)
            for key, value in (entry[2] if len(entry) > 2 else {}).items():
                setattr(info, key, value)
            tar.addfile(info, io.BytesIO(data) if data is not None and info.isreg() else None)
    return out.getvalue()


def make_cases(tmp):
    """The corpus: [(name, case)], files written under ``tmp``.  A case is a dict for
    :func:`hostile_runner.serve` (argv, and maybe stdin, env, cwd, stdout)."""
    tmp = str(tmp)
    cases = []
    count = [0]

    def view():
        count[0] += 1
        return [a.replace("{tmp}", tmp) for a in VIEWS[count[0] % len(VIEWS)]]

    def capture_case(name, data, args=None):
        path = os.path.join(tmp, f"c{len(cases)}")
        with open(path, "wb") as f:
            f.write(data)
        cases.append((name, {"argv": ["-S", path] + (view() if args is None else args)}))

    # archives of every compression: intact, cut, damaged, with garbage after
    tar = _with_file("meminfo", MEMINFO)
    for kind in KINDS:
        good = compress(kind, tar)
        capture_case(f"{kind}: intact", good)
        for cut in (1, 10, len(good) // 4, len(good) // 2, len(good) - 20, len(good) - 1):
            capture_case(f"{kind}: cut at {cut}", good[:cut])
        for at in (0.1, 0.5, 0.9):
            damaged = bytearray(good)
            i = int(len(good) * at)
            damaged[i:i + 8] = bytes(b ^ 0xA5 for b in damaged[i:i + 8])
            capture_case(f"{kind}: damaged at {at}", bytes(damaged))
        capture_case(f"{kind}: garbage after", good + b"garbage" * 10)
        capture_case(f"{kind}: twice", good + good)
    capture_case("zstd: checksum wrong", compress("zstd", tar)[:-1] + b"\0")
    capture_case("zstd: 2 GiB window", zstd_with_window(31))
    capture_case("zstd: 128 GiB window", zstd_with_window(37))
    capture_case("xz: 4 GiB dictionary", xz_with_dictionary(tar))
    capture_case("xz: 1.5 GiB dictionary", xz_with_dictionary(tar, 39))

    # bombs
    for kind in ("gzip", "zstd", "bzip2", "xz"):
        unit = 64 << 20 if kind in ("gzip", "zstd") else 8 << 20
        capture_case(f"{kind} bomb: a member claiming 3 GiB",
                     zeros_stream(kind, unit, prefix=without_end(tar) + header(b"1234/smaps", 3 << 30)))
        capture_case(f"{kind} bomb: zeros after the end",
                     zeros_stream(kind, (2 << 30) if unit == 64 << 20 else unit * 4, prefix=tar) + b"trailing")
        capture_case(f"{kind} bomb: zeros for a header", zeros_stream(kind, unit * 2))
    capture_case("gzip bomb: pax header claiming 3 GiB", zeros_stream(
        "gzip", 256 << 20, prefix=without_end(tar) + header(b"PaxHeader", 3 << 30, kind=b"x")))
    capture_case("gzip bomb: a member of 3 GiB of zeros, read by -m", zeros_stream(
        "gzip", 512 << 20, prefix=without_end(tar) + header(b"1236/smaps", 3 << 30)), ["-m"])
    capture_case("gzip bomb: frames of 3 GiB", zeros_stream(
        "gzip", 256 << 20, prefix=without_end(tar) + header(b"1236/frames", 3 << 30)), ["--exact", "-u"])
    capture_case("gzip bomb: smaps of 250 MiB of zeros", zeros_stream(
        "gzip", 64 << 20, prefix=without_end(tar) + header(b"1236/smaps", 250 << 20)), ["-m"])

    # tar structure
    for name, data in _tar_oddities().items():
        capture_case(f"tar: {name}", data)
        capture_case(f"tar.gz: {name}", compress("gzip", data))

    # hostile field contents
    for fname, (original, _) in _FILES.items():
        for variant, content in _field_variants(original).items():
            capture_case(f"{fname}: {variant}", _with_file(fname, content),
                         ["--cgroup", "-c", "cgroup some10 full300 pss", "-F", "json"]
                         if fname.endswith("memory.pressure") and variant in ("garbage", "huge numbers", "cut")
                         else None)
            if fname in CHARTED and variant in ("garbage", "huge numbers", "control", "non-utf8"):
                chart = ["--pie", "name", "-o", f"{tmp}/pie.png"] if len(cases) % 2 else \
                    ["--bar", "pid", "-o", f"{tmp}/bar.svg"]
                capture_case(f"{fname}: {variant}, {chart[0]}", _with_file(fname, content), chart)

    # device fdinfo (GPU clients, dma-bufs): each hostile variant as fd 7 of one process and fd 3 of
    # another, read by the GPU columns in the formats
    device_views = (["-t"], ["-F", "json"], ["-F", "openmetrics"], ["-u", "-t", "-p"], ["-F", "csv"], ["-g", "-k"])
    for fname, leaf, original in (("drm", "fdinfo/7", DRM_FDINFO), ("dma-buf", "fdinfo/7", DMABUF_FDINFO),
                                  ("dma-buf mapped", "smaps", SMAPS + DMABUF_MAPPING)):
        for n, (variant, content) in enumerate(_field_variants(original).items()):
            processes = {1234: process_files(**{leaf: content}), 1235: process_files(1235, **{leaf: content})}
            capture_case(f"fdinfo {fname}: {variant}", tar_of(capture_members(processes=processes)),
                         ["-c", "pid gpu gpushared gpuvram dmabuf"] + device_views[n % len(device_views)])
        capture_case(f"fdinfo {fname}: breakdown", tar_of(capture_members(processes={
            1234: process_files(**{leaf: _field_variants(original)["huge numbers"]})})), ["-w", "--breakdown"])

    # absurd figures
    for args in ([], ["--pie", "name", "-o", f"{tmp}/big70.png"], ["--bar", "pid", "-o", f"{tmp}/big70.svg"],
                 ["-u", "-p"]):
        capture_case(f"smaps: PSS of 2**70 kB {' '.join(args[:1])}",
                     _with_file("smaps", SMAPS.replace(b"150 kB", b"%d kB" % 2 ** 70)), args)
    capture_case("meminfo: MemTotal of 10**30 kB",
                 _with_file("meminfo", MEMINFO.replace(b"2048000", b"1" + b"0" * 30)),
                 ["-w"])
    for args in (["--pie", "name", "-o", f"{tmp}/big.png"], ["--bar", "name", "-o", f"{tmp}/big.png"], ["-p"],
                 ["-k", "-t"]):
        capture_case(f"smaps: PSS of 2**60 kB, {' '.join(args[:1])}",
                     _with_file("smaps", SMAPS.replace(b"150 kB", b"%d kB" % 2 ** 60)), args)

    # exact accounting
    spread = [4096 * (i + 1) for i in range(100000)]
    for name, data in {
        "spread frames": exact_capture(spread),
        "wrapped frames": exact_capture([5, 6, 7], frames=frames_member([(0x400000, 3, 0)], [5, 6, (1 << 64) - 1])),
        "wrapped swap": exact_capture([5, 6], frames=frames_member([(0x400000, 2, 1)], [5, 6], [1 << 63])),
        "segment counts wrap": exact_capture([5, 6, 7], frames=frames_member(
            [(0x400000, 1 << 63, 0), (0x500000, (1 << 63) + 3, 0)], [5, 6, 7])),
        "page size 0": exact_capture([5], kpages=kpages_member([5], [1], page_size=0)),
        "page size 2**63": exact_capture([5], kpages=kpages_member([5], [1], page_size=1 << 63)),
        "frames truncated": exact_capture([5, 6], frames=frames_member([(0x400000, 2, 0)], [5, 6])[:-5]),
        "frames not frames": exact_capture([5], frames=b"garbage" * 10),
        "kpages not kpages": exact_capture([5], kpages=_garbage(3, 100)),
        "kpages huge count": exact_capture([5], kpages=kpages_member([5], [1 << 63])),
        "kpages count header lies": exact_capture([5], kpages=b"SMEMKPG1" + u64([4096, 1 << 62, 0]) + u64([5, 1])),
        "frames count header lies": exact_capture(
            [5], frames=b"SMEMFRM1" + u64([4096, 1, 1 << 62, 0, 0x400000, 1, 0, 5])),
        "raw kpagecount, page size abc": tar_of(capture_members(extra=[("kpagecount", bytes(64)),
                                                                      ("capture-info", b"pagesize=abc\n")])),
    }.items():
        for args in (["--exact", "-u"], ["--exact"], ["--shared-with", "-P", "dbus"]):
            capture_case(f"exact: {name} {' '.join(args)}", data, args)

    # directory captures
    secret = os.path.join(tmp, "secret")
    with open(secret, "wb") as f:
        f.write(SMAPS.replace(b"dbus-daemon", b"SECRET"))

    def tree(name, hostile):
        root = os.path.join(tmp, f"d{len(cases)}")
        os.mkdir(root)
        with open(os.path.join(root, "meminfo"), "wb") as f:
            f.write(MEMINFO)
        for pid in (1234, 1235):
            os.mkdir(os.path.join(root, str(pid)))
            for leaf, data in process_files(pid).items():
                with open(os.path.join(root, str(pid), leaf), "wb") as f:
                    f.write(data)
        hostile(root)
        for args in ([], ["-m"], ["-w"]):
            cases.append((f"dir: {name} {' '.join(args)}", {"argv": ["-S", root] + args}))

    def replace(path, make):
        def hostile(root):
            target = os.path.join(root, path)
            if os.path.lexists(target):
                os.unlink(target)
            make(target)
        return hostile

    tree("smaps links out", replace("1234/smaps", lambda t: os.symlink(secret, t)))
    tree("meminfo links out", replace("meminfo", lambda t: os.symlink(secret, t)))
    tree("meminfo is a FIFO", replace("meminfo", os.mkfifo))
    tree("smaps is a FIFO", replace("1234/smaps", os.mkfifo))
    tree("smaps is /dev/zero", replace("1234/smaps", lambda t: os.mknod(t, 0o644 | stat.S_IFCHR, os.makedev(1, 5))))
    tree("meminfo is /dev/zero", replace("meminfo", lambda t: os.mknod(t, 0o644 | stat.S_IFCHR, os.makedev(1, 5))))
    tree("smaps is a directory", replace("1234/smaps", os.mkdir))
    tree("meminfo is a directory", replace("meminfo", os.mkdir))
    tree("smaps is a loop", replace("1234/smaps", lambda t: os.symlink("smaps", t)))
    tree("pid links to /proc/1", replace("1236", lambda t: os.symlink("/proc/1", t)))
    tree("proc links to /proc", replace("proc", lambda t: os.symlink("/proc", t)))
    tree("status links to /etc/shadow", replace("1234/status", lambda t: os.symlink("/etc/shadow", t)))
    tree("superscript pid", replace("²", os.mkdir))
    tree("sparse 2 GiB smaps", replace("1234/smaps", lambda t: open(t, "wb").truncate(2 << 30)))
    tree("unreadable smaps", replace("1234/smaps", lambda t: os.mkfifo(t, 0)))

    # options
    base = os.path.join(tmp, "base.tar")
    with open(base, "wb") as f:
        f.write(_with_file("meminfo", MEMINFO))
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    empty = os.path.join(tmp, "empty")
    open(empty, "wb").close()
    for value in ("", " ", "9" * 5000, "1e24", "2\nG", "٢G", "２G", "0", "-1G", "16E", "1" + "0" * 40, "2GiB",
                  "1.5G", "abc", "2 G", "0x10", "nan", "inf", "2G\0"):
        for extra in (["-w"], ["-p"]):
            cases.append((f"-R {value!r} {extra[0]}", {"argv": ["-S", base, "-R", value] + extra}))
    for option in ("-P", "-U", "-M"):
        for pattern in ("a{99999999999}", "(" * 50000, "(", "[z-a]", "\\", "(?P<1>x)", "\\p{Nope}", "\0", "\udcff",
                        "x" * 100000):
            cases.append((f"{option} {pattern[:20]!r}", {"argv": ["-S", base, option, pattern]}))
    # (a pattern that runs away on a long name, and a host that stalls, each take the second
    # they are allowed: test_hostile_options' test_a_runaway_match_is_stopped_and_refused and
    # test_a_stalled_host_is_given_up_on run them, not the corpus)
    for value in (",", "", " ", "pid,,name", "pid " * 1000, "nosuch", "\0", "pid\nname", "PID", "name " * 5000):
        cases.append((f"-c {value[:20]!r}", {"argv": ["-S", base, "-c", value]}))
    for value in ("", "nosuch", "\0", "pss,rss", "-pss", "PSS", "name " * 1000):
        cases.append((f"-s {value[:20]!r}", {"argv": ["-S", base, "-s", value]}))
    for spec in ("ssh://[abc", "ssh://host?x", "ssh://host#x", "ssh://", "ssh://-oProxyCommand=x", "ssh://a:b@host",
                 "ssh://host:99999", "/nonexistent", "/dev/null", "/dev/zero", fifo + "-none", empty, tmp + "/",
                 "\0", "-", "/etc/passwd", "/proc/self/mem"):
        cases.append((f"-S {spec!r}", {"argv": ["-S", spec]}))
    cases.append(("-S a host sending garbage", {"argv": ["-S", "ssh://host"],
                                                 "env": {"SMEM_SSH": "sh -c 'cat >/dev/null; "
                                                                     "head -c 3000000 /dev/urandom' x"}}))
    cases.append(("-S - with zeros", {"argv": ["-S", "-"], "stdin": "/dev/zero"}))
    cases.append(("-S - with nothing", {"argv": ["-S", "-"]}))
    cases.append(("-S - with a capture", {"argv": ["-S", "-"], "stdin": base}))
    kernels = {"random": _garbage(4, 1 << 20), "ELF and garbage": b"\x7fELF\x02\x01\x01" + _garbage(5, 5000),
               "ELF header only": elf_header(), "ELF, 65535 sections far away": elf_header(shoff=1 << 40, shnum=65535),
               "ELF, extended counts": elf_header(shoff=64, shnum=0), "ELF, headers past the end": elf_header(
                   shoff=1 << 20, shnum=10)}
    for kind in ("gzip", "zstd"):
        kernels[f"{kind} bomb of ELF zeros"] = one_stream(kind, 64 << 20, prefix=b"\x7fELF")
    for kind in ("gzip", "xz", "zstd", "bzip2"):
        kernels[f"{kind} ELF claiming 1 TiB"] = zeros_stream(kind, 1 << 20, prefix=elf_header(shoff=1 << 40,
                                                                                                shnum=3))
        kernels[f"{kind} ELF claiming 255 MiB"] = zeros_stream(kind, 16 << 20, prefix=elf_header(shoff=255 << 20,
                                                                                                   shnum=3))
    kernels["bzImage header, payload past the end"] = bzimage_header(1 << 30)
    kernels["bzImage of garbage"] = bzimage_header(4096) + _garbage(6, 8192)
    bomb = one_stream("gzip", 64 << 20, prefix=elf_header(shoff=64, shnum=3)[:-2] + b"\0\0")
    kernels["bzImage of a gzip bomb"] = bzimage_header(len(bomb)) + bomb
    kernels["70 gzip candidates"] = one_stream("gzip", 1 << 20, prefix=b"\x7fELF") * 70
    for name, data in kernels.items():
        path = os.path.join(tmp, f"k{len(cases)}")
        with open(path, "wb") as f:
            f.write(data)
        cases.append((f"-K {name}", {"argv": ["-S", base, "-w", "-K", path]}))
    for path in (fifo, "/dev/zero", tmp, "/nonexistent", empty, base, "/dev/null"):
        cases.append((f"-K {path.replace(tmp, 'TMP')}", {"argv": ["-S", base, "-w", "-K", path]}))
    for args in (["-F", "nosuch"], ["--pie", "nosuch", "-o", f"{tmp}/x.png"], ["--bar", "pss", "-o", f"{tmp}/x.nosuch"],
                 ["-o", f"{tmp}/x.png"], ["--recommend", "nan", "-w"], ["--recommend", "-1", "-w"],
                 ["--pie", "name", "-o", "/nonexistent/dir/x.png"], ["--pie", "name", "-o", "/dev/full"],
                 ["--pie", "name", "-o", tmp], ["-m", "-u"], ["--shared-with"], ["--exact", "-w"],
                 ["--group", "nosuch"], ["--cgroup", "-m"]):
        cases.append((f"options {' '.join(args).replace(tmp, 'TMP')}", {"argv": ["-S", base] + args}))
    cases.append(("output to /dev/full", {"argv": ["-S", base], "stdout_path": "/dev/full"}))
    cases.append(("closed stdout", {"argv": ["-S", base], "stdout": "closed"}))
    cases.append(("-o to a FIFO without a reader", {"argv": ["-S", base, "--pie", "name", "-o", fifo]}))
    cases.append(("capture -o /dev/full", {"argv": ["capture", "-o", "/dev/full"]}))
    cases.append(("capture to closed stdout", {"argv": ["capture"], "stdout": "closed"}))
    return cases
