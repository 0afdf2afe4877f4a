"""-K on the kernel images of ARM boards: an arm64 or RISC-V Image is sized by its header's
image_size (the RAM the kernel image takes), plain, gzip-compressed or inside a U-Boot uImage;
an ARM zImage, a uImage of one and an arm64 Image of before 3.17 (image_size 0) are each one line
saying what they are and to give the ELF vmlinux.  They were all "not ... a compressed kernel
image".  The images are headers with the documented fields (tests/fixtures/kernel_images/make_images.py).
"""

import pytest

from conftest import FIXTURES, run_smem
from smem.errors import KernelImageError
from smem.parsers.kernel_image import kernel_image_size

IMAGES = FIXTURES / "kernel_images"
CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"
ARM64, RISCV = 0x2A60000, 0x1C3A000  # the image_size each header says (make_images.py)


@pytest.mark.parametrize("name,size,fmt", [
    ("arm64-Image", ARM64, "arm64 Image, image_size from its header"),
    ("arm64-Image.gz", ARM64, "gzip-compressed arm64 Image at offset 0x0, image_size from its header"),
    ("arm64-uImage-Image.gz", ARM64, "gzip-compressed arm64 Image at offset 0x40, image_size from its header"),
    ("riscv-Image", RISCV, "RISC-V Image, image_size from its header"),
    ("riscv-Image.gz", RISCV, "gzip-compressed RISC-V Image at offset 0x0, image_size from its header"),
])
def test_an_image_is_sized_by_its_headers_image_size(name, size, fmt):
    found = kernel_image_size((IMAGES / name).read_bytes())
    assert (found.total, found.format) == (size, fmt)


@pytest.mark.parametrize("name,said", [
    ("arm-zImage", "an ARM zImage (a self-decompressing kernel): the size of the kernel it holds is not "
                   "recorded; give the build tree's ELF vmlinux (or an Image)"),
    ("arm-uImage", "a U-Boot uImage ('Linux-2.6.28'): the size of the kernel it holds is not recorded; give "
                   "the build tree's ELF vmlinux (or an Image)"),
    ("arm64-Image-3.16", "an arm64 Image whose header gives no image_size (a kernel before 3.17): its size is "
                         "not recorded; give the build tree's ELF vmlinux"),
])
def test_an_image_that_does_not_say_its_size_is_named(name, said):
    with pytest.raises(KernelImageError) as raised:
        kernel_image_size((IMAGES / name).read_bytes())
    assert str(raised.value) == said


def test_an_image_size_past_any_kernels_is_refused():
    data = bytearray((IMAGES / "arm64-Image").read_bytes())
    data[16:24] = (1 << 40).to_bytes(8, "little")
    with pytest.raises(KernelImageError, match="more than 256 MiB: not a kernel's"):
        kernel_image_size(bytes(data))


def test_the_kernel_image_row_of_w_takes_an_image_gz():
    proc = run_smem("-S", CAPTURE, "-w", "-K", IMAGES / "arm64-Image.gz")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().splitlines()
    row = next(line for line in lines if line.startswith("kernel image "))
    assert row.split()[2:5] == [str(ARM64 // 1024), "0", str(ARM64 // 1024)]  # used, cache, noncache
    assert f"kernel image: from -K {IMAGES / 'arm64-Image.gz'} (gzip-compressed arm64 Image" in lines[-1]
    refused = run_smem("-S", CAPTURE, "-w", "-K", IMAGES / "arm-zImage")
    assert refused.returncode == 1 and refused.stderr.decode().splitlines() == [
        f"smem: {IMAGES / 'arm-zImage'}: an ARM zImage (a self-decompressing kernel): the size of the kernel "
        "it holds is not recorded; give the build tree's ELF vmlinux (or an Image)"]
