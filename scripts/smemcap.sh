#!/bin/sh
# smemcap.sh - capture the /proc data smem needs, for analysis on another machine.
#
# For embedded targets without Python: needs only a POSIX sh (dash, busybox
# ash) and the busybox applets cat, mkdir, rm and tar (plus chown when run as
# root).  gzip, date, uname, mktemp, stat, getconf, hostname, dd, ls, grep and
# readlink are used when present.  Writes a gzip-compressed tar (a plain tar, with a warning,
# where there is no gzip) to stdout, or to FILE compressed as its name says (bzip2, xz and zstd
# where the box has them); the layout is described in docs/capture-format.md.  Run as root to capture every process.

tool='smemcap.sh 1'
prog=smemcap.sh
# The script parses ls -l's lines (memfds, GPU and dma-buf fds): names as they are, whatever
# quoting a user's QUOTING_STYLE asks GNU ls for (shell-escape, its style on a terminal, quotes
# '/memfd:x (deleted)'; c quotes every name).  Busybox ls quotes none.
QUOTING_STYLE=literal
export QUOTING_STYLE

usage() {
	cat <<EOF
usage: $prog [-h] [-f] [FILE]

Capture /proc/meminfo, /proc/version and, for every readable process, its
smaps, smaps_rollup, cmdline, stat, status and its GPU and dma-buf fds' fdinfo
(plus /proc/iomem, /sys/firmware/memmap, /proc/sysvipc/shm, tmpfs mounts and
memfds, zram, KSM and zswap settings, dma-bufs, /etc/passwd and host details)
as a gzip-compressed tar (a plain tar where there is no gzip) written to
stdout when FILE is omitted or "-", else to FILE compressed as its name says
(.tar none, .tgz or .tar.gz gzip, .tar.bz2 bzip2, .tar.xz xz, .tar.zst zstd;
gzip for any other name but one of a compression it cannot write, such as
.lz4, which is refused), where the box has that tool.
Analyse it elsewhere with: smem -S FILE

An existing FILE is rewritten only if it is empty or already holds a capture
(compressed or tar); -f (--force) rewrites any file.

Run as root to include other users' processes and to record their owners.
Temporary files go under \${TMPDIR:-/tmp} and are removed on exit.
EOF
}

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

force=
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	-f | --force)
		force=1
		shift
		;;
	--)
		shift
		break
		;;
	-?*)
		printf '%s: unknown option %s (try -h)\n' "$prog" "$1" >&2
		exit 2
		;;
	*) break ;;
	esac
done
if [ $# -gt 1 ]; then
	printf '%s: too many arguments (try -h)\n' "$prog" >&2
	exit 2
fi
out=${1:--}
# A name that says a compression this script never writes would hold gzip under it, misleading
# every tool that reads it by its name: a usage error, as smem capture -o's.
unwritten=
case $out in
*.[Ll][Zz]4) unwritten=lz4 ;;
*.[Ll][Zz]) unwritten=lzip ;;
*.[Ll][Zz][Mm][Aa] | *.[Tt][Ll][Zz]) unwritten=lzma ;;
*.[Ll][Zz][Oo]) unwritten=lzop ;;
*.Z | *.taZ) unwritten=compress ;;
esac
if [ -n "$unwritten" ]; then
	printf '%s: %s names %s, which %s cannot write: name it %s\n' "$prog" "$out" "$unwritten" "$prog" \
		"FILE.tgz, FILE.tar.bz2, FILE.tar.xz, FILE.tar.zst or FILE.tar" >&2
	exit 2
fi

[ -r /proc/meminfo ] && [ -d /proc/self ] ||
	die "/proc is not mounted (cannot read /proc/meminfo)"
# A kernel without /proc/PID/smaps (CONFIG_PROC_PAGE_MONITOR off, or no MMU: small boards): its
# processes are captured without their memory, for the system's (smem -w), and that is said
no_smaps=
[ -e /proc/self/smaps ] || no_smaps=1

# A small busybox may be built without one of these: say which, before any work (without cat
# the copy of meminfo would seem to fail, without rm the temporary files would stay, ...).
need_applets() {
	for a in "$@"; do
		command -v "$a" >/dev/null 2>&1 ||
			die "$a not found on PATH (the script needs cat, mkdir, rm and tar, and chown as root)"
	done
}
need_applets cat mkdir rm tar
# Whether $1 is on PATH and compresses (busybox's xz and lzma only decompress).
can_compress() {
	command -v "$1" >/dev/null 2>&1 && : | "$1" -c >/dev/null 2>&1
}
have_gzip=
can_compress gzip && have_gzip=1
# FILE is compressed as its name says, as smem capture -o reads it (box.tar.xz: xz, box.tar:
# none), with the tool where the box has one, else refused: never another format under that name.
# Standard output, or a name that says none, is gzip's; without gzip a plain tar (smem reads
# either), some times larger: said once.
asked=
[ "$out" = - ] || case $out in
*.[Tt][Aa][Rr]) asked=none ;;
*.[Tt][Gg][Zz] | *.[Gg][Zz]) asked=gzip ;;
*.[Tt][Bb][Zz] | *.[Tt][Bb][Zz]2 | *.[Bb][Zz]2) asked=bzip2 ;;
*.[Tt][Xx][Zz] | *.[Xx][Zz]) asked=xz ;;
*.[Tt][Zz][Ss][Tt] | *.[Zz][Ss][Tt]) asked=zstd ;;
esac
compressor=
case $asked in
none) ;;
'')
	if [ -n "$have_gzip" ]; then
		compressor=gzip
	else
		printf '%s: warning: gzip not found on PATH: writing an uncompressed tar\n' "$prog" >&2
	fi
	;;
*)
	if ! can_compress "$asked"; then
		instead="FILE.tar for a plain tar"
		[ -n "$have_gzip" ] && instead="FILE.tgz, or $instead"
		die "cannot write $out as its name asks: no $asked on PATH that compresses; name it $instead"
	fi
	compressor=$asked
	;;
esac
# (zstd says its progress on a terminal unless -q)
zflags=-c
[ "$compressor" = zstd ] && zflags='-q -c'

# --- cleanup on exit and on HUP/INT/TERM ------------------------------------
tmp=
job=
finished=
created=
next=

cleanup() {
	if [ -n "$job" ]; then
		kill "$job" 2>/dev/null
		wait 2>/dev/null
		job=
	fi
	[ -n "$tmp" ] && rm -rf -- "$tmp"
	tmp=
	[ -n "$next" ] && rm -f -- "$next"
	next=
	# A half-written capture is useless; only remove a file we created.
	[ -z "$finished" ] && [ -n "$created" ] && rm -f -- "$out"
}

on_signal() {
	cleanup
	trap - EXIT "$1"
	kill -s "$1" $$
	exit "$2"
}

trap cleanup EXIT
trap 'on_signal HUP 129' HUP
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM

# --- output: open it now so an unwritable path fails before any work -------
# Whether FILE starts as a capture does, by its first bytes: a gzip, bzip2, xz or zstd stream, or
# a tar (smem capture -o looks further, at the archive's first file: busybox cannot, everywhere).
# A file that does not (a user's document) is not ours to destroy.
holds_capture() {
	# its first bytes: 6 with dd, where there is one (a file of one long line is not read whole
	# into the shell), else its first line
	if command -v dd >/dev/null 2>&1; then
		head=$(dd if="$1" bs=6 count=1 2>/dev/null)
	else
		IFS= read -r head <"$1"
	fi
	case $head in
	"$(printf '\037\213')"* | BZh* | "$(printf '\3757zXZ')"* | "$(printf '\050\265\057\375')"*)
		return 0
		;;
	esac
	# else a tar that lists a member: to tar, a file of zeros (a disk image, a swap file) is an
	# empty archive, and it is no capture
	tar tf "$1" 2>/dev/null | { IFS= read -r member; }
}

if [ "$out" = - ]; then
	exec 3>&1
else
	if [ -z "$force" ] && [ -f "$out" ] && [ -s "$out" ] && ! holds_capture "$out"; then
		die "refusing to replace $out: it exists and does not hold a capture; give -f to replace it"
	fi
	[ -e "$out" ] || created=1
	# a new FILE is private (0600, as smem capture -o): command lines and users are in it
	if ! (umask 077 && : >>"$out") 2>/dev/null; then
		die "cannot write $out"
	fi
	# opened without truncating it, to see whether it is a terminal; fd 3 is then a scratch file
	# under $tmp (below), copied over FILE only once whole: a run stopped half-way leaves an
	# existing FILE (last night's capture) as it was, not empty
	exec 3>>"$out"
fi
if [ -t 3 ]; then
	die "refusing to write a capture to a terminal (give FILE or redirect stdout)"
fi
[ "$out" = - ] || exec 3>&-

# --- temporary directory ------------------------------------------------------
umask 077
base=${TMPDIR:-/tmp}
if command -v mktemp >/dev/null 2>&1; then
	tmp=$(mktemp -d "$base/smemcap.XXXXXX" 2>/dev/null) || tmp=
fi
if [ -z "$tmp" ]; then
	i=0
	while [ $i -lt 100 ]; do
		# mkdir is atomic and fails on an existing name or symlink.
		if mkdir "$base/smemcap.$$.$i" 2>/dev/null; then
			tmp=$base/smemcap.$$.$i
			break
		fi
		i=$((i + 1))
	done
fi
[ -n "$tmp" ] || die "cannot create a temporary directory under $base (set TMPDIR to a writable directory)"
# The 0700 temp dir keeps the copies private; members get /proc-like modes.
umask 022
cap=$tmp/c
mkdir "$cap" || die "cannot write to $tmp"
if [ "$out" != - ]; then
	: >"$tmp/capture" || die "cannot write to $tmp"
	exec 3>"$tmp/capture"
fi

# --- system-wide files ------------------------------------------------------
cat /proc/meminfo >"$cap/meminfo" 2>/dev/null || die "cannot copy /proc/meminfo"
cat /proc/version >"$cap/version" 2>/dev/null || die "cannot copy /proc/version"
members='capture-info meminfo version'

if [ -r /proc/iomem ] && cat /proc/iomem >"$cap/iomem" 2>/dev/null; then
	members="$members iomem"
else
	rm -f -- "$cap/iomem"
fi

# The per-CPU free lists (zoneinfo) and the swap devices (swaps), for smem -w --breakdown;
# the time since boot (uptime), what the cpu column measures processes' CPU time against.
for f in zoneinfo swaps uptime; do
	if [ -r "/proc/$f" ] && cat "/proc/$f" >"$cap/$f" 2>/dev/null; then
		members="$members $f"
	else
		rm -f -- "$cap/$f"
	fi
done
# Memory pressure (PSI, Linux 4.20+), for smem -w and the cgroup view (absent is fine).
if [ -r /proc/pressure/memory ] && mkdir -p "$cap/pressure" &&
	cat /proc/pressure/memory >"$cap/pressure/memory" 2>/dev/null; then
	members="$members pressure"
else
	rm -rf -- "$cap/pressure"
fi

# The kernel's configuration: built without per-page map counts (CONFIG_NO_PAGE_MAPCOUNT,
# 6.15+), its PSS and USS are estimates, and smem says so.
kcfg=/boot/config-$(uname -r 2>/dev/null)
if [ -r /proc/config.gz ] && cat /proc/config.gz >"$cap/config.gz" 2>/dev/null; then
	members="$members config.gz"
elif [ -n "$have_gzip" ] && [ -r "$kcfg" ] && gzip -c "$kcfg" >"$cap/config.gz" 2>/dev/null; then
	members="$members config.gz"
else
	rm -f -- "$cap/config.gz"
fi

# The boot line "Memory: ...K kernel code, ...K rwdata, ..." sizes the kernel image
# when iomem cannot (dmesg needs root on most systems; absent is fine).
if dmesg 2>/dev/null | grep 'Memory:' >"$cap/dmesg" 2>/dev/null && [ -s "$cap/dmesg" ]; then
	members="$members dmesg"
else
	rm -f -- "$cap/dmesg"
fi

if [ -d /sys/firmware/memmap ]; then
	for e in /sys/firmware/memmap/*; do
		[ -d "$e" ] || continue
		k=${e##*/}
		d=$cap/sys/firmware/memmap/$k
		mkdir -p "$d" || die "cannot write to $tmp"
		for f in start end type; do
			cat "$e/$f" >"$d/$f" 2>/dev/null || rm -f -- "$d/$f"
		done
	done
fi

# zram devices, KSM and zswap settings, for smem -w's breakdown (absent is fine).
copy_sys() { # copy_sys DIR FILE...: /sys/DIR/FILE into sys/DIR/FILE, where readable
	dir=$1
	shift
	made=
	for f in "$@"; do
		[ -f "/sys/$dir/$f" ] && [ -r "/sys/$dir/$f" ] || continue
		# (the directory once, not once a file: each mkdir is a fork and an exec)
		[ -n "$made" ] || mkdir -p "$cap/sys/$dir" || die "cannot write to $tmp"
		made=1
		cat "/sys/$dir/$f" >"$cap/sys/$dir/$f" 2>/dev/null || rm -f -- "$cap/sys/$dir/$f"
	done
}
for z in /sys/block/zram*; do
	[ -d "$z" ] && copy_sys "block/${z##*/}" mm_stat disksize comp_algorithm
done
for dir in kernel/mm/ksm module/zswap/parameters; do
	[ -d "/sys/$dir" ] || continue
	set --
	for f in "/sys/$dir"/*; do
		set -- "$@" "${f##*/}"
	done
	copy_sys "$dir" "$@"
done
# every dma-buf the kernel lists, held or not (sysfs statistics, else debugfs), for the
# breakdown's row of buffers no process holds
for b in /sys/kernel/dmabuf/buffers/[0-9]*; do
	[ -d "$b" ] && copy_sys "kernel/dmabuf/buffers/${b##*/}" size exporter_name
done
[ -d /sys/kernel/dmabuf/buffers ] || copy_sys kernel/debug/dma_buf bufinfo
[ -d "$cap/sys" ] && members="$members sys"

if [ -r /etc/passwd ] && cat /etc/passwd >"$cap/passwd" 2>/dev/null; then
	members="$members passwd"
else
	rm -f -- "$cap/passwd"
fi

# --- shared memory (smem --shm) ----------------------------------------------------
# SysV segments, and the smem/shmem inventory (docs/capture-format.md): tmpfs mounts
# (statfs), the files at the top of /dev/shm, and the memfds processes hold.  Needs
# stat; the memfds need ls and readlink.  Amounts in RAM are left to smem capture (cachestat): "-".
if [ -r /proc/sysvipc/shm ] && mkdir -p "$cap/sysvipc" &&
	cat /proc/sysvipc/shm >"$cap/sysvipc/shm" 2>/dev/null; then
	members="$members sysvipc"
else
	rm -rf -- "$cap/sysvipc"
fi

nl='
'
shmem_mounts() {
	seen=' '
	while read -r id parent majmin root mp rest; do
		fs=${rest#* - }
		fstype=${fs%% *}
		case $fstype in tmpfs | devtmpfs) ;; *) continue ;; esac
		case $seen in *" $majmin "*) continue ;; esac
		seen="$seen$majmin "
		major=${majmin%%:*}
		minor=${majmin#*:}
		dev=$(((minor & 255) | (major << 8) | ((minor & ~255) << 12)))
		capacity=-
		used=-
		reachable=
		# (a mount point with an escaped character, or hidden by a later mount, is not statted)
		case $mp in *\\*) ;; *)
			[ "$(stat -c %d "$mp" 2>/dev/null)" = "$dev" ] && reachable=1
			;;
		esac
		if [ -n "$reachable" ]; then
			set -- $(stat -f -c '%S %b %f' "$mp" 2>/dev/null)
			if [ $# -eq 3 ]; then
				capacity=$(($1 * $2))
				used=$(($1 * ($2 - $3)))
			fi
		fi
		printf 'mount %s %s %s %s - - %s\n' "$majmin" "$fstype" "$capacity" "$used" "$mp"
		[ -n "$reachable" ] && [ "$mp" = /dev/shm ] || continue
		for f in "$mp"/* "$mp"/.[!.]* "$mp"/..?*; do
			[ -f "$f" ] && [ ! -h "$f" ] || continue
			case $f in *"$nl"* | *\\*) continue ;; esac
			set -- $(stat -c '%i %s %b %B' "$f" 2>/dev/null)
			[ $# -eq 4 ] && printf 'file %s %s %s %s - %s\n' "$majmin" "$1" "$2" "$(($3 * $4))" "$f"
		done
	done </proc/self/mountinfo
}

# (grep, where there is one, keeps the shell's byte-at-a-time read off the other links)
fd_links() {
	if command -v grep >/dev/null 2>&1; then
		ls -l /proc/[0-9]*/fd 2>/dev/null | grep -e '^/proc/' -e ' -> /memfd:'
	else
		ls -l /proc/[0-9]*/fd 2>/dev/null
	fi
}

# (Each line's link is checked against readlink: GNU ls writes a newline in a name as it is, so a
# memfd named to forge lines, a "/proc/1/fd:" header and an fd under it, would make another
# process's fd a memfd of the name it chose.  A name with a newline or a backslash is left out.)
shmem_memfds() {
	command -v ls >/dev/null 2>&1 && command -v readlink >/dev/null 2>&1 || return 0
	pid=
	fd_links | while read -r line; do
		case $line in
		/proc/*/fd:)
			pid=${line#/proc/}
			pid=${pid%/fd:}
			;;
		*' -> /memfd:'*)
			left=${line%% -> *}
			fd=${left##* }
			link=${line#* -> }
			memfd_line "$pid" "$fd" "$link" "/proc/$pid/fd"
			;;
		esac
	done
}

memfd_line() { # memfd_line PID FD LINK DIR: the inventory's line of memfd DIR/FD (LINK, as ls said it)
	case $1$2 in '' | *[!0-9]*) return 0 ;; esac
	case $3 in *\\*) return 0 ;; esac
	[ "$(readlink "$4/$2" 2>/dev/null)" = "$3" ] || return 0
	set -- "$1" "$2" "$3" $(stat -L -c '%d %i %s %b %B' "$4/$2" 2>/dev/null)
	[ $# -eq 8 ] || return 0
	printf 'memfd %s:%s %s %s %s - %s %s %s\n' "$((($4 >> 8) & 4095))" \
		"$((($4 & 255) | (($4 >> 12) & 1048320)))" "$5" "$6" "$(($7 * $8))" "$1" "$2" "$3"
}

# A process whose first thread exited (ps: Zl) has an empty /proc/N/fd (the leader let go of the
# table its threads share): its memfds are listed from the live thread copy_pid read it through,
# into a file added to the inventory once every process is copied.
zl_memfds() { # zl_memfds PID DIR: the memfds of fd directory DIR, held by PID
	[ -f "$cap/smem/shmem" ] && command -v ls >/dev/null 2>&1 && command -v readlink >/dev/null 2>&1 || return 0
	ls -l "$2" 2>/dev/null | while IFS= read -r line; do
		case $line in *' -> /memfd:'*) ;; *) continue ;; esac
		left=${line%% -> *}
		memfd_line "$1" "${left##* }" "${line#* -> }" "$2"
	done >>"$tmp/zl-memfds"
}

if command -v stat >/dev/null 2>&1 && [ -r /proc/self/mountinfo ]; then
	mkdir -p "$cap/smem" || die "cannot write to $tmp"
	{
		echo '# smem shmem inventory 1'
		shmem_mounts
		shmem_memfds
	} >"$cap/smem/shmem" || die "cannot write to $tmp"
	members="$members smem"
fi

# --- capture-info -------------------------------------------------------------
page_size() {
	if command -v getconf >/dev/null 2>&1; then
		p=$(getconf PAGESIZE 2>/dev/null)
		case $p in '' | *[!0-9]*) ;; *)
			echo "$p"
			return
			;;
		esac
	fi
	# Without getconf: the first mapping's KernelPageSize is the base page
	# size (Documentation/filesystems/proc.rst, "smaps").
	[ -z "$no_smaps" ] || return 0
	while read -r key val unit; do
		if [ "$key" = KernelPageSize: ] && [ "$unit" = kB ]; then
			echo $((val * 1024))
			return
		fi
	done </proc/self/smaps
}

host=$(hostname 2>/dev/null) || host=
[ -n "$host" ] || host=$(uname -n 2>/dev/null) || host=
[ -n "$host" ] || host=$(cat /proc/sys/kernel/hostname 2>/dev/null) || host=
kernel=$(uname -r 2>/dev/null) || kernel=
[ -n "$kernel" ] || kernel=$(cat /proc/sys/kernel/osrelease 2>/dev/null) || kernel=
machine=$(uname -m 2>/dev/null) || machine=
now=$(date -u '+%s %Y-%m-%dT%H:%M:%SZ' 2>/dev/null) || now=
pagesize=$(page_size)

# Unknown values are left out rather than written empty.
{
	[ -n "$host" ] && printf 'hostname=%s\n' "$host"
	case $now in [0-9]*' '[0-9]*)
		printf 'time=%s\n' "${now#* }"
		printf 'epoch=%s\n' "${now%% *}"
		;;
	esac
	[ -n "$pagesize" ] && printf 'pagesize=%s\n' "$pagesize"
	[ -n "$kernel" ] && printf 'kernel=%s\n' "$kernel"
	[ -n "$machine" ] && printf 'machine=%s\n' "$machine"
	printf 'tool=%s\n' "$tool"
} >"$cap/capture-info" || die "cannot write to $tmp"

# --- processes ----------------------------------------------------------------
# Owners are only recorded when we may chown, i.e. as root.
myuid=
while read -r key r e rest; do
	if [ "$key" = Uid: ]; then
		myuid=$e
		break
	fi
done </proc/$$/status
[ "$myuid" = 0 ] && need_applets chown
have_stat=
command -v stat >/dev/null 2>&1 && have_stat=1
have_rollup=
[ -e /proc/self/smaps_rollup ] && have_rollup=1
have_readlink=
command -v readlink >/dev/null 2>&1 && have_readlink=1
have_ls=
command -v ls >/dev/null 2>&1 && have_ls=1

# /proc/N is owned by the task's effective uid/gid (as smem's os.stat sees
# it); status's second Uid:/Gid: field is the effective id.
owner() {
	o=
	[ -n "$have_stat" ] && o=$(stat -c '%u:%g' "/proc/$1" 2>/dev/null)
	case $o in [0-9]*:[0-9]*)
		echo "$o"
		return 0
		;;
	esac
	u=
	g=
	while read -r key r e rest; do
		case $key in
		Uid:) u=$e ;;
		Gid:) g=$e ;;
		esac
	done <"$2/status"
	[ -n "$u" ] && [ -n "$g" ] && echo "$u:$g"
}

# The fdinfo of the process's DRM/accel clients and dma-bufs (GPU and dma-buf memory),
# as N/fdinfo/FD; fds closed meanwhile, or unreadable, are left out.  The links are read by one
# ls -l of the fd directory where there is ls (a phone's processes hold hundreds of fds: a
# readlink each is a fork and an exec each), else by a readlink a descriptor.  (Its own ls
# lines are all a process can shape, through names it opens: at worst another of its own fds.)
copy_device_fds() {
	set -- "$1" "$2" "$1"/fd/[0-9]*
	[ -e "$3" ] || [ -L "$3" ] || return 0 # none open (a kernel thread's, a zombie's)
	if [ -n "$have_ls" ]; then
		ls -l "$1/fd" 2>/dev/null | while IFS= read -r line; do
			case $line in *' -> '*) ;; *) continue ;; esac
			left=${line%% -> *}
			device_fd "$1" "$2" "${left##* }" "${line#* -> }"
		done
	elif [ -n "$have_readlink" ]; then
		for f in "$1"/fd/[0-9]*; do
			[ -e "$f" ] || [ -L "$f" ] || continue
			device_fd "$1" "$2" "${f##*/}" "$(readlink "$f" 2>/dev/null)"
		done
	fi
	return 0
}

device_fd() { # device_fd SRC DST FD LINK: FD's fdinfo into DST/fdinfo/FD where LINK is device memory
	case $3 in '' | *[!0-9]*) return 0 ;; esac
	case $4 in
	/dev/dri/* | /dev/accel/* | /dmabuf:* | anon_inode:dmabuf) ;;
	*) return 0 ;;
	esac
	[ -d "$2/fdinfo" ] || mkdir "$2/fdinfo" || return 0
	cat "$1/fdinfo/$3" >"$2/fdinfo/$3" 2>/dev/null || rm -f -- "$2/fdinfo/$3"
}

# Copies one process; fails if it vanished or is unreadable.
copy_pid() {
	src=/proc/$1
	dst=$cap/$1
	mm=$src
	[ -n "$no_smaps" ] || cat "$src/smaps" >"$dst/smaps" 2>/dev/null || return 1
	# Kernel threads have no mm: empty smaps, and smaps_rollup fails (ESRCH).  So has a process
	# whose first thread exited while others run on (ps says "Zl"): its address space (smaps,
	# smaps_rollup, cmdline) is read through another of its threads.
	if [ -z "$no_smaps" ] && [ ! -s "$dst/smaps" ]; then
		for t in "$src"/task/[0-9]*; do
			[ "$t" = "$src/task/$1" ] && continue
			if cat "$t/smaps" >"$dst/smaps" 2>/dev/null && [ -s "$dst/smaps" ]; then
				mm=$t
				break
			fi
			: >"$dst/smaps"
		done
	fi
	if [ -n "$have_rollup" ]; then
		cat "$mm/smaps_rollup" >"$dst/smaps_rollup" 2>/dev/null ||
			rm -f -- "$dst/smaps_rollup"
	fi
	cat "$mm/cmdline" >"$dst/cmdline" 2>/dev/null || return 1
	cat "$src/stat" >"$dst/stat" 2>/dev/null || return 1
	cat "$src/status" >"$dst/status" 2>/dev/null || return 1
	# the memory cgroup, for smem --cgroup (absent on kernels without cgroups)
	cat "$src/cgroup" >"$dst/cgroup" 2>/dev/null || rm -f -- "$dst/cgroup"
	copy_device_fds "$mm" "$dst"
	[ "$mm" = "$src" ] || zl_memfds "$1" "$mm/fd"
	if [ "$myuid" = 0 ]; then
		o=$(owner "$1" "$dst") || return 1
		chown -R "$o" "$dst" 2>/dev/null || return 1
	fi
	return 0
}

# The processes left out, named as smem capture names them: pid 1 (init), ... and 4 more.
nskipped=0
named=
skipped() {
	nskipped=$((nskipped + 1))
	[ "$nskipped" -le 3 ] || return 0
	comm=
	{ IFS= read -r comm <"/proc/$1/comm"; } 2>/dev/null
	case $comm in *[![:print:]]*) comm=? ;; esac
	named="$named${named:+, }pid $1${comm:+ ($comm)}"
}

# The cpu column is a process's CPU time over the time since it started, that is, uptime less its
# start: uptime is read again here, and this shell, which works all through the loop, is copied
# first, right after it.  Read minutes before and copied last, the shell's CPU time outran its age
# by the whole capture (400% of one core on two cores).
if [ -s "$cap/uptime" ] && up=$(cat /proc/uptime 2>/dev/null) && [ -n "$up" ]; then
	printf '%s\n' "$up" >"$cap/uptime"
fi
npids=0
own_copied=
for p in "/proc/$$" /proc/[0-9]*; do
	n=${p#/proc/}
	case $n in *[!0-9]*) continue ;; esac
	[ "$p" != "/proc/$$" ] || [ -z "$own_copied" ] || continue  # (the shell, copied first)
	own_copied=1
	[ -n "$no_smaps" ] || [ -r "$p/smaps" ] || continue
	if ! mkdir "$cap/$n" 2>/dev/null; then
		[ -d "$p" ] || continue
		die "cannot write to $tmp"
	fi
	if copy_pid "$n"; then
		npids=$((npids + 1))
	else
		rm -rf -- "${cap:?}/$n"
		# still there: not gone meanwhile but unreadable (another user's, when not root)
		[ -d "$p" ] && skipped "$n"
	fi
done
[ -z "$no_smaps" ] || [ "$npids" -eq 0 ] ||
	printf '%s: warning: %s\n' "$prog" "the kernel gives no /proc/PID/smaps (built without CONFIG_PROC_PAGE_MONITOR, or without an MMU): no process's memory can be measured, and the processes are captured without it; smem -w reads the system's" >&2
if [ "$nskipped" -gt 0 ] && [ "$npids" -gt 0 ]; then
	if [ "$nskipped" -eq 1 ]; then
		what="1 process could not be read and was left out"
	else
		what="$nskipped processes could not be read and were left out"
	fi
	[ "$nskipped" -gt 3 ] && named="$named and $((nskipped - 3)) more"
	[ "$myuid" = 0 ] || named="$named; run as root to capture them"
	printf '%s: warning: %s: %s\n' "$prog" "$what" "$named" >&2
fi
# A /proc mounted hidepid=invisible (2) or ptraceable (4) lists no directory for the processes
# we may not read: none is unreadable above, so say they are left out (root sees them all, and
# under invisible so does the mount's gid= group: fs/proc/base.c has_pid_permissions).
hidden=
if [ "$myuid" != 0 ]; then
	while read -r _ _ _ _ mnt rest; do
		case " $rest" in *' - proc '*) [ "$mnt" = /proc ] || continue ;; *) continue ;; esac
		super=",${rest##* }," # the last field: the super options (a later mount is on top)
		case $super in
		*,hidepid=2,* | *,hidepid=invisible,*) hidden=invisible ;;
		*,hidepid=4,* | *,hidepid=ptraceable,*) hidden=ptraceable ;;
		*) hidden= ;;
		esac
		hidegid=
		case $super in *,gid=*) hidegid=${super#*,gid=} hidegid=${hidegid%%,*} ;; esac
	done </proc/self/mountinfo
	if [ "$hidden" = invisible ] && [ -n "$hidegid" ]; then
		while read -r key a b c d; do # Gid: real effective saved fs; Groups: the supplementary ones
			case $key in
			Gid:) [ "$d" = "$hidegid" ] && hidden= ;;
			Groups:) case " $a $b $c $d " in *" $hidegid "*) hidden= ;; esac ;;
			esac
		done </proc/$$/status
	fi
	if [ -n "$hidden" ]; then
		which="other users' processes"
		[ "$hidden" = ptraceable ] && which="the processes it may not trace"
		printf '%s: warning: /proc is mounted hidepid=%s: %s are hidden and left out; run as root to capture them\n' \
			"$prog" "$hidden" "$which" >&2
	fi
fi
# ... and the capture says so too, to whoever reads it later (docs/capture-format.md)
if [ "$nskipped" -gt 0 ]; then
	printf 'unreadable_processes=%s\n' "$nskipped" >>"$cap/capture-info" || die "cannot write to $tmp"
	# root refused even so (a container's root, a security module): not a capture to take again as root
	if [ "$myuid" = 0 ]; then
		printf 'unreadable_by_root=1\n' >>"$cap/capture-info" || die "cannot write to $tmp"
	fi
fi
if [ -n "$hidden" ]; then
	printf 'hidepid=%s\n' "$hidden" >>"$cap/capture-info" || die "cannot write to $tmp"
fi
# A /proc of a PID namespace of its own (a container's) lists its processes only, while meminfo is
# the machine's; the machine's /proc always lists the kernel's kthreadd as pid 2 (Linux 2.6.22+).
# (PID namespaces came in 2.6.24; on an older kernel pid 2 is migration/0 or ksoftirqd/0)
pidns=
case $kernel in
2.6.2[4-9]* | 2.6.[3-9][0-9]* | [3-9].* | [1-9][0-9]*.*) pidns=1 ;;
esac
if [ -z "$hidden" ] && [ -n "$pidns" ]; then
	stat2=
	{ IFS= read -r stat2 </proc/2/stat; } 2>/dev/null
	# (no pid 2 at all is a namespace's; one we may not read, hidepid=noaccess, cannot be told)
	case $stat2 in
	'2 (kthreadd) '*) ;;
	'') [ -e /proc/2 ] || printf 'pid_namespace=1\n' >>"$cap/capture-info" || die "cannot write to $tmp" ;;
	*) printf 'pid_namespace=1\n' >>"$cap/capture-info" || die "cannot write to $tmp" ;;
	esac
fi
[ "$npids" -gt 0 ] || die "no process could be read (is /proc mounted?)"
if [ -s "$tmp/zl-memfds" ]; then
	cat "$tmp/zl-memfds" >>"$cap/smem/shmem" || die "cannot write to $tmp"
fi

# The cgroup v2 memory.stat and memory.pressure of each process's cgroup (its 0:: line), for
# the zswap column's per-cgroup compression and the cgroup view's pressure (absent is fine:
# cgroup v1, or no memory controller or PSI).
for d in "$cap"/[0-9]*; do
	[ -f "$d/cgroup" ] || continue
	while IFS= read -r line; do
		case $line in
		0::/*) cg=${line#0::} ;;
		*) continue ;;
		esac
		case $cg/ in */../* | */./*) continue ;; esac
		for leaf in memory.stat memory.pressure; do
			f=/sys/fs/cgroup$cg/$leaf
			t=$cap/sys/fs/cgroup$cg/$leaf
			[ ! -e "$t" ] && [ -f "$f" ] && [ -r "$f" ] || continue
			mkdir -p "${t%/*}" || die "cannot write to $tmp"
			cat "$f" >"$t" 2>/dev/null || rm -f -- "$t"
		done
	done <"$d/cgroup"
done
case " $members " in
*" sys "*) ;;
*) [ -d "$cap/sys" ] && members="$members sys" ;;
esac

# --- archive --------------------------------------------------------------------
# Explicit member names (no "./" prefix).  The pipeline runs in the
# background so a signal interrupts the wait and the trap can stop it.
if [ -n "$compressor" ]; then
	{
		(cd "$cap" && exec tar cf - $members [0-9]*) || : >"$tmp/tar-failed"
	} | "$compressor" $zflags >&3 &
else
	(cd "$cap" && exec tar cf - $members [0-9]*) >&3 || echo "$?" >"$tmp/tar-failed" &
fi
job=$!
wait "$job"
rc=$?
job=
wait
# SIGPIPE (13) killed the writer: the reader closed the pipe (nc that could not connect or was cut)
[ "$rc" -eq 0 ] || [ "$rc" -ne $((128 + 13)) ] || rc=pipe
[ -e "$tmp/tar-failed" ] && [ "$(cat "$tmp/tar-failed")" = $((128 + 13)) ] && rc=pipe
[ "$rc" = pipe ] && die "writing the capture failed: whatever read its output closed the pipe before the end (nc could not connect or was cut off?); what it received is not a whole capture"
[ "$rc" -eq 0 ] || die "writing the capture failed (${compressor:-tar} exit $rc)"
[ -e "$tmp/tar-failed" ] && die "writing the capture failed (tar error)"
exec 3>&-
if [ "$out" != - ]; then
	# Beside FILE first, then renamed over it: copied straight over FILE, a disk that filled
	# half-way lost the capture that was there.  In place where nothing can be made beside it (a
	# directory not ours), where FILE is a link (written through, as before) or without mv.
	dir=.
	case $out in */*) dir=${out%/*}; [ -n "$dir" ] || dir=/ ;; esac
	if [ ! -L "$out" ] && [ -w "$dir" ] && command -v mv >/dev/null 2>&1; then
		next=$out.smemcap-$$
		if ! (umask 077 && cat "$tmp/capture" >"$next") 2>/dev/null; then
			die "writing the capture failed (cannot write beside $out; $out is as it was)"
		fi
		mv -f -- "$next" "$out" 2>/dev/null || die "writing the capture failed (cannot replace $out)"
		next=
	else
		cat "$tmp/capture" >"$out" 2>/dev/null || die "writing the capture failed (cannot write $out)"
	fi
fi
finished=1
exit 0
