#!/bin/sh
# Fetch a real distribution kernel (Debian's cloud-amd64 vmlinuz, ~35 MB .deb)
# for tests/test_kernel_image.py::test_real_distribution_vmlinuz, which skips
# when tests/.cache/ holds no vmlinuz.
#
# Picks the newest linux-image-<version>-cloud-amd64-unsigned that apt knows,
# downloads it with `apt-get download` (no install), unpacks its boot/ with
# dpkg-deb into tests/.cache/root/ and prints the vmlinuz path on stdout.
# Idempotent: an already unpacked vmlinuz is reused.  Needs `apt-get update`
# to have run (it runs it once if apt knows no such package).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cache="$here/.cache"
mkdir -p "$cache"
# Never commit the download.
[ -f "$cache/.gitignore" ] || echo '*' > "$cache/.gitignore"

existing=$(ls "$cache"/root/boot/vmlinuz-* 2>/dev/null | head -n 1 || true)
if [ -n "$existing" ]; then
    echo "$existing"
    exit 0
fi

newest() {
    apt-cache search --names-only '^linux-image-[0-9].*-cloud-amd64-unsigned$' \
        | cut -d' ' -f1 | sort -V | tail -n 1
}

pkg=$(newest)
if [ -z "$pkg" ]; then
    apt-get update >/dev/null
    pkg=$(newest)
fi
if [ -z "$pkg" ]; then
    echo "fetch_kernel.sh: apt knows no linux-image-*-cloud-amd64-unsigned package" >&2
    exit 1
fi

cd "$cache"
rm -f ./*.deb
# apt-get download drops privileges to _apt; let it write here.
chmod 0777 "$cache" 2>/dev/null || true
apt-get download -q "$pkg" >&2
deb=$(ls ./*.deb | head -n 1)
mkdir -p "$cache/root"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$cache/root" ./boot
rm -f "$deb"
echo "$pkg" > "$cache/PACKAGE"
ls "$cache"/root/boot/vmlinuz-* | head -n 1
