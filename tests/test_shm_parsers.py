"""The parsers behind --shm: /proc/sysvipc/shm of old and new kernels, mountinfo's escapes, and
the smem/shmem inventory member."""

from pathlib import Path

from smem.parsers.mountinfo import parse_mountinfo
from smem.parsers.shmem_inventory import escape, parse_shmem_inventory
from smem.parsers.sysvipc_shm import parse_sysvipc_shm

#: Linux before 3.10: no rss and swap columns (ipc/shm.c's format of 2.6)
OLD_KERNEL = (b"       key      shmid perms       size  cpid  lpid nattch   uid   gid  cuid  cgid      atime"
              b"      dtime      ctime\n"
              b"         0      32768   600     393216  2365  2398      2  1000  1000  1000  1000 1302766524"
              b"          0 1302766520\n"
              b"1234567890      32769  1600    8388608  2400  2400      0     0     0     0     0          0"
              b"          0 1302766600\n")


def test_an_old_kernel_has_no_rss_or_swap_which_is_not_zero():
    segments = parse_sysvipc_shm(OLD_KERNEL)
    assert [(s.key, s.shmid, s.perms, s.size, s.nattch) for s in segments] == [
        (0, 32768, 0o600, 393216, 2), (1234567890, 32769, 0o1600, 8388608, 0)]
    assert all(s.rss is None and s.swap is None for s in segments)


def test_this_kernels_file_parses_with_its_columns():
    data = Path("/proc/sysvipc/shm").read_bytes()
    header = data.split(b"\n")[0].split()
    segments = parse_sysvipc_shm(data)
    assert len(segments) == len([line for line in data.split(b"\n")[1:] if line.strip()])
    if b"rss" in header:
        assert all(s.rss is not None and s.swap is not None for s in segments)


def test_mountinfo_decodes_escaped_mount_points():
    line = (b"30 25 0:27 / /mnt/my\\040disk\\134x rw,relatime shared:5 - tmpfs tmpfs rw,size=24683792k\n"
            b"27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n")
    mounts = parse_mountinfo(line)
    assert [(m.device, m.mount_point, m.fstype) for m in mounts] == [
        ((0, 27), "/mnt/my disk\\x", "tmpfs"), ((254, 0), "/", "ext4")]


def test_mountinfo_mount_point_with_a_carriage_return_is_whole():
    """The kernel escapes a space, tab, newline and backslash in a path, not a carriage return
    (nor \\x1c, U+2028), which str.splitlines also ends a line at: the mount was lost."""
    data = "31 25 0:28 / /home/u/a\rb\u2028c rw - tmpfs tmpfs rw\n27 1 254:0 / / rw - ext4 /dev/vda rw\n"
    assert [m.mount_point for m in parse_mountinfo(data.encode())] == ["/home/u/a\rb\u2028c", "/"]


def test_inventory_names_survive_spaces_newlines_and_backslashes():
    name = "/dev/shm/a b\nc\\040d"
    data = (f"# smem shmem inventory 1\n"
            f"mount 0:27 tmpfs 4096 - - - /dev/shm\n"
            f"file 0:27 12 5000 8192 - {escape(name)}\n"
            f"memfd 0:1 99 10 4096 4096 321 7 /memfd:x y (deleted)\n"
            f"future-kind 1 2 3\n"
            f"file 0:27 not-a-number 1 1 1 /dev/shm/bad\n").encode()
    inventory = parse_shmem_inventory(data)
    assert [(m.device, m.capacity, m.used, m.files, m.rss) for m in inventory.mounts] == [((0, 27), 4096, None,
                                                                                            None, None)]
    assert [(f.inode, f.size, f.allocated, f.rss, f.path) for f in inventory.files] == [(12, 5000, 8192, None, name)]
    assert [(h.pid, h.fd, h.name, h.rss) for h in inventory.memfds] == [(321, 7, "x y", 4096)]


def test_the_inventory_is_a_value_no_reader_can_add_to():
    inventory = parse_shmem_inventory(b"mount 0:27 tmpfs 4096 - - - /dev/shm\nfile 0:27 12 5000 8192 - /dev/shm/a\n"
                                      b"memfd 0:1 99 10 4096 4096 321 7 /memfd:x (deleted)\n")
    assert [len(objects) for objects in inventory] == [1, 1, 1]
    assert all(isinstance(objects, tuple) for objects in inventory)
