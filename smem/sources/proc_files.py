"""How a file of this machine's /proc is read: whole, in the fewest system calls, and, for a process
whose first thread has exited while its others run on, through one of those.

The thread that starts a process (the thread group's leader, whose id is the pid) may exit
before the others (pthread_exit from main; ps then says "Zl"): it stays a zombie until the last
thread ends, and its files of the address space the threads share are empty (smaps, maps,
cmdline) or refuse to be read (smaps_rollup, pagemap: ESRCH), while the process holds all its
memory.  /proc/PID/task/TID/ of a live thread has the same files of the same address space
(Documentation/filesystems/proc.rst, "Process-Specific Subdirectories").
"""

import os

__all__ = ["read_whole", "WHOLE_IF_SHORT", "through_a_thread", "open_live", "address_space_dir", "descriptors", "ADDRESS_SPACE_FILES"]


#: A process's files that a read returning fewer bytes than asked has read to their end, so no
#: read is made to find it: the seq_files of one record (stat, statm, status, smaps_rollup:
#: single_open, fs/seq_file.c, returns what is left of its one record up to the count) and
#: cmdline (proc_pid_cmdline_read copies until the count or the arguments' end).  A seq_file of
#: many records (smaps, maps) may return less than asked before its end: its buffer filled.
WHOLE_IF_SHORT = frozenset({"cmdline", "smaps_rollup", "stat", "statm", "status"})


def read_whole(path, whole_if_short=False):
    """The file's bytes: open, read to an empty read, close (three or four system calls, where
    open().read() adds two fstat and an lseek; /proc files say size 0 and may come in pieces).
    ``whole_if_short`` (a file of :data:`WHOLE_IF_SHORT`): a first read shorter than asked is the
    whole file, and the empty read that would say so is not made."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.read(fd, 1 << 16)
        if not data or (whole_if_short and len(data) < 1 << 16):
            return data
        chunks = [data]
        while True:
            chunk = os.read(fd, 1 << 18)
            if not chunk:
                return data if len(chunks) == 1 else b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


#: A process's files of its address space, which its threads share: where the thread that started
#: it (the thread group's leader, whose id is the pid) has exited and others run on (ps says "Zl"),
#: the leader's are empty or fail (ESRCH) and a live thread's say what the process holds.
#: (/proc/PID/task/TID/: Documentation/filesystems/proc.rst, "Process-Specific Subdirectories".)
ADDRESS_SPACE_FILES = frozenset({"smaps", "smaps_rollup", "cmdline", "maps", "pagemap"})


def _other_threads(proc, path):
    """The same file of each thread of the process but its leader (``path`` is PID/NAME, NAME one of
    ADDRESS_SPACE_FILES; none else).  A kernel thread or a zombie has no other: one listing of its
    task directory."""
    pid, _, name = path.partition("/")
    if name not in ADDRESS_SPACE_FILES:
        return []
    try:
        threads = os.listdir(f"{proc}/{pid}/task")
    except OSError:
        return []
    return [f"{proc}/{pid}/task/{tid}/{name}" for tid in threads if tid != pid]


def through_a_thread(proc, path):
    """``path`` read through a thread of the process other than its leader that is alive and says
    something, else None."""
    for other in _other_threads(proc, path):
        try:
            data = read_whole(other)
        except OSError:
            continue  # (that thread ended meanwhile)
        if data:
            return data
    return None


def open_live(proc, path):
    """A descriptor of ``path``, opened through another thread where the leader's fails (ESRCH)."""
    try:
        return os.open(f"{proc}/{path}", os.O_RDONLY | os.O_CLOEXEC)
    except ProcessLookupError:
        for other in _other_threads(proc, path):
            try:
                return os.open(other, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
        raise


def address_space_dir(proc, pid):
    """The directory whose files are ``pid``'s address space's: ``proc/PID``, or where its first
    thread exited while others run on (ps: Zl), ``proc/PID/task/TID`` of a live one (the leader's
    maps is empty, and its clear_refs takes a write and clears nothing).  Only a process whose
    statm says no memory (a kernel thread, a zombie) has its task directory listed."""
    leader = f"{proc}/{pid}"
    try:
        if not read_whole(f"{leader}/statm").startswith(b"0 "):
            return leader
        threads = os.listdir(f"{leader}/task")
    except OSError:
        return leader
    for tid in threads:
        try:
            if tid != str(pid) and not read_whole(f"{leader}/task/{tid}/statm").startswith(b"0 "):
                return f"{leader}/task/{tid}"
        except OSError:
            continue  # (that thread ended meanwhile)
    return leader


def descriptors(proc, pid):
    """(directory, names): the directory whose ``fd/`` and ``fdinfo/`` hold ``pid``'s open files, and
    the names in its ``fd/``.  Its threads share one table of them (CLONE_FILES), which the leader
    lets go when it exits (exit_files): where it has and others run on (ps: Zl), its ``fd/`` is
    empty and a live thread's has them.  Only an empty ``fd/`` (a kernel thread's, a zombie's, a
    daemon's that closed all) has the task directory listed.  OSError where ``fd/`` cannot be read."""
    leader = f"{proc}/{pid}"
    names = os.listdir(f"{leader}/fd")
    if names:
        return leader, names
    try:
        threads = os.listdir(f"{leader}/task")
    except OSError:
        return leader, names
    for tid in threads:
        if tid == str(pid):
            continue
        try:
            held = os.listdir(f"{leader}/task/{tid}/fd")
        except OSError:
            continue  # (that thread ended meanwhile)
        if held:
            return f"{leader}/task/{tid}", held
    return leader, names
