"""Scripts of processes that map a /dev/shm file, for the tests of smem --shm."""

#: maps the file named by the script's first argument MAP_SHARED as ``shared``, touching each page
#: (a script that starts with it imports mmap, os and sys)
MAP_FIRST_FILE = r"""
import mmap, os, sys
with open(sys.argv[1], "r+b") as f:
    shared = mmap.mmap(f.fileno(), 0)
for offset in range(0, len(shared), mmap.PAGESIZE):
    shared[offset] = 1
"""

#: says it is ready, then waits until its stdin closes
READY_THEN_WAIT = r"""
print("ready", flush=True)
sys.stdin.read()
"""
