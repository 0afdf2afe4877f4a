"""What -w's sizing figures leave in doubt, said on stderr: an image that may not be the kernel
that ran, an -R below MemTotal (read as a size to try, or without its unit), a capture that gives
neither installed RAM nor the kernel image's size (its 0s are unknown, not nothing)."""

from .units import human

__all__ = ["sizing_warnings"]


def sizing_warnings(source, sizing, system, mem_total, abbreviate=False):
    """The warnings of ``sizing`` (installed RAM and kernel image Figures) of ``source`` under the
    -R/-K/--recommend of ``system``; amounts as -k has them with ``abbreviate``."""
    warnings = [f.doubt for f in sizing if f is not None and f.doubt]
    if system.ram_kib is not None and system.ram_kib < mem_total:
        warnings.append(_realmem_below(system, mem_total, abbreviate))
    if not source.local:
        warnings.extend(_sizes_unknown(source, *sizing))
    return warnings


def _sizes_unknown(source, ram, kernel):
    """The warning for a capture that says neither installed RAM nor the kernel image's size (C
    smemcap's: meminfo and processes only; iomem read without root): the table shows 0 for them,
    as smem 1.5's did, and only this line says they are unknown, not nothing."""
    no_ram = ram is not None and ram.source.startswith("MemTotal")
    no_kernel = kernel is not None and not kernel.kib
    if not (no_ram or no_kernel):
        return []
    what = ("neither the installed RAM nor the kernel image's size" if no_ram and no_kernel
            else "no installed RAM" if no_ram else "no kernel image size")
    rows = " and ".join(r for r, unknown in (("firmware/hardware", no_ram), ("kernel image", no_kernel)) if unknown)
    give = " and ".join(o for o, unknown in (("-R SIZE", no_ram), ("-K vmlinux", no_kernel)) if unknown)
    return [f"{source.description} says {what} (it has no iomem, firmware memmap or boot log: C smemcap's, "
            f"or not taken as root): {rows} show{'s' if rows.count(' and ') == 0 else ''} 0; give {give}"]


def _realmem_below(system, mem_total, abbreviate):
    """The warning for an -R below MemTotal, naming -R as read: whoever asks "would 256 MiB do?"
    with -R 256M learns that -R is the measured machine's RAM and --recommend the answer, and an
    -R without a unit (256: bytes) is said to be bytes; one with a unit (1K) is shown as read."""
    amount = human if abbreviate else (lambda kib: f"{kib} KiB")  # -k: as the table
    size = system.realmem_bytes
    # -R as the user wrote it (2G, not 2097152 KiB), and in the table's unit to compare with MemTotal
    if system.realmem_bare and size < 1 << 20:
        given = f"{size} bytes (a size without a unit is bytes: {size}M is {size} MiB)"
    elif size < 1024 or (size < 1 << 20 and size % 1024):  # -R 512B, 1.5K: what KiB would round
        given = f"{size} bytes"
    else:
        given = human(system.ram_kib) + ("" if abbreviate else f" ({amount(system.ram_kib)})")
    line = (f"-R {given} is less than the memory the kernel manages (MemTotal {amount(mem_total)}): "
            "firmware/hardware shows as 0")
    if system.recommend is None:
        line += ("; -R is the RAM installed in the machine measured, not a size to try: "
                 "--recommend names the smallest RAM that holds what it uses")
    return line
