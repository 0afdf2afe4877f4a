"""Installed RAM and the kernel image: the two figures /proc/meminfo lacks.

MemTotal leaves out the kernel image and memory reserved at boot, so the
system view needs two more figures to account for all of RAM.  smem 1.5 took
them only from the user (-R, and -K through the ``size`` command); we take
them, in order of preference:

- installed RAM: ``-R``; the "System RAM" entries of /sys/firmware/memmap
  (Documentation/ABI/testing/sysfs-firmware-memmap); the top-level "System
  RAM" ranges of /proc/iomem (root only since Linux 4.15); else MemTotal,
  as smem 1.5 did;
- kernel image: ``-K FILE`` (an ELF vmlinux or a compressed bzImage/vmlinuz,
  sized as Berkeley ``size`` would); the "Kernel code/rodata/data/bss" ranges
  of /proc/iomem; the boot line "Memory: ...K kernel code, ...K rwdata, ..."
  of the kernel log (an estimate: it is printed before the kernel frees its
  init sections and other late changes); else unknown (0, as smem 1.5).

Each figure says where it came from, so reports can say so too.
"""

import os
import stat
from dataclasses import dataclass

from .errors import KernelImageError, UsageError
from .parsers.boot_memory_line import parse_boot_memory_line
from .parsers.iomem import kernel_image_bytes, parse_iomem, system_ram_bytes
from .parsers.kernel_image import banner_release, kernel_image_size
from .parsers.memmap import parse_memmap

__all__ = ["Figure", "installed_ram", "kernel_image", "size_system"]


@dataclass(frozen=True)
class Figure:
    kib: int
    source: str              # where it came from, for the footnote and the `source` column
    estimate: bool = False
    smem15: bool = True      # a source smem 1.5 had too (-R, -K, meminfo): no footnote then
    doubt: str = ""          # a reason to doubt the figure, for a warning
    known: bool = True       # False where the data does not give it: installed RAM taken as
                             # MemTotal, a kernel image of unknown size (0)


def _iomem(source):
    data = source.read_optional("iomem")
    return parse_iomem(data) if data else None


def installed_ram(source, realmem_bytes=None, mem_total_kib=None, iomem=None):
    """``iomem``: the parsed /proc/iomem when the caller has it already."""
    if realmem_bytes is not None:
        return Figure(realmem_bytes // 1024, "-R")
    memmap = source.firmware_memmap()
    if memmap:
        try:
            ram = parse_memmap(memmap)
        except ValueError:
            ram = None
        if ram:
            return Figure(ram // 1024, "/sys/firmware/memmap", smem15=False)
    resources = iomem if iomem is not None else _iomem(source)
    if resources:
        ram = system_ram_bytes(resources)
        if ram:
            return Figure(ram // 1024, "/proc/iomem", smem15=False)
    if mem_total_kib is not None:
        return Figure(mem_total_kib, "MemTotal (installed RAM unknown)", known=False)
    return None


#: No kernel image is this large; a larger file (or /dev/zero) is not one.
MAX_KERNEL_FILE = 1 << 30


def read_kernel_file(path, example="/boot/vmlinuz-$(uname -r)"):
    """The bytes of ``path``, a regular file of at most MAX_KERNEL_FILE bytes.

    What is not a regular file (a FIFO that would block, /dev/zero that never ends, a
    directory) is refused before anything is read, and so is a file too large.
    """
    if "\0" in path:
        raise UsageError(f"-K {path!r}: a path cannot hold a NUL byte")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as e:
        raise KernelImageError(f"cannot read kernel image {path}: {e.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KernelImageError(f"{path} is not a regular file (a device, FIFO or directory): not a kernel image; "
                                   f"give the image file, e.g. {example}")
        if info.st_size > MAX_KERNEL_FILE:
            raise KernelImageError(f"{path} is larger than 1 GiB: not a kernel image")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_KERNEL_FILE + 1)
    except OSError as e:
        raise KernelImageError(f"cannot read kernel image {path}: {e.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_KERNEL_FILE:
        raise KernelImageError(f"{path} is larger than 1 GiB: not a kernel image")
    return data


def kernel_image(source, kernel_path=None, iomem=None):
    if kernel_path is not None:
        data = read_kernel_file(kernel_path, _example_image(source))
        try:
            size = kernel_image_size(data)
        except KernelImageError as e:
            raise KernelImageError(f"{kernel_path}: {e}") from None
        doubt = ""
        if not size.banner:
            doubt = f"{kernel_path} holds an ELF file that is not a Linux kernel (no 'Linux version' banner); sized anyway"
        elif size.release is not None and _release_ran(source) not in (None, size.release):
            ran = "this machine runs" if source.local else f"{source.description} ran"
            doubt = (f"-K {kernel_path} is Linux {size.release}, but {ran} {_release_ran(source)}: "
                     "sized anyway; give the image of the kernel that ran")
        # smem 1.5 had -K too, but printed its figure as a float: the table differs anyway, so
        # the footnote names the image as given
        return Figure(size.total // 1024, f"-K {kernel_path} ({size.format})", doubt=doubt, smem15=False)
    resources = iomem if iomem is not None else _iomem(source)
    if resources:
        image = kernel_image_bytes(resources)
        if image:
            return Figure(image // 1024, "/proc/iomem", smem15=False)
    log = source.boot_log()
    line = parse_boot_memory_line(log) if log else None
    if line:
        parts = [line.get(k) for k in ("kernel code", "rwdata", "rodata", "bss")]
        if line.get("data") is not None and parts[1] is None:
            parts[1] = line["data"]  # older kernels: "...K data"
        if any(p is not None for p in parts):
            return Figure(sum(p or 0 for p in parts), "boot log", estimate=True, smem15=False)
    return Figure(0, "unknown (give -K)", known=False)


def _example_image(source):
    """The image file to name where -K was given something else: this machine's in /boot; for a
    capture (a board's), the build tree's, of the release it ran: /boot here holds another kernel."""
    if source.local:
        return "/boot/vmlinuz-$(uname -r)"
    release = _release_ran(source)
    return "the build tree's vmlinux" + (f" of the kernel {source.description} ran, {release}" if release else "")


def _release_ran(source):
    """The release of the kernel ``source`` ran (its uname -r, else its /proc/version's), or None."""
    release = source.machine().kernel
    if release:
        return release
    version = source.read_optional("version")
    return banner_release(version + b" ") if version else None


def size_system(source, mem_total_kib, realmem_bytes=None, kernel_path=None):
    """(installed RAM, kernel image) Figures for the system view, reading /proc/iomem once."""
    iomem = _iomem(source) if realmem_bytes is None or kernel_path is None else None
    return (installed_ram(source, realmem_bytes, mem_total_kib, iomem or []),
            kernel_image(source, kernel_path, iomem or []))
