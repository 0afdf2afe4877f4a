/* Optional C step of smem.sources.held_stats: every process's /proc/PID/stat read through a
 * descriptor kept open from one collection to the next, and only what changed handed back.
 *
 *   scan(proc, fds, last, floor[, gated, sched_fds, sched_last]) -> (pids, changed)
 *
 * proc: the /proc directory (str).  fds: {pid: fd} of the descriptors held (updated: opened,
 * and closed for a process gone or whose pid is another's now).  last: {pid: bytes} of each
 * stat as last read (updated).  floor: the lowest number a held descriptor may have (moved
 * there with F_DUPFD_CLOEXEC, so that those of the rest of the program stay below it, where
 * select() takes them); where none is free at or over it, the stat is read and its file closed.
 *
 * pids: the numbered entries of proc, ascending.  changed: (pid, bytes) for each whose stat is
 * not what ``last`` held (new, or changed), (pid, None) for one ``last`` held that cannot be read
 * now.  A stat whose bytes are the same is left out: most processes have not run since.
 *
 * gated: a set of pids whose stat is not read where they have not run since the last scan: their
 * /proc/PID/schedstat (its first number the nanoseconds the task ran: a single thread's, so the
 * caller gates only processes of one thread) is what ``sched_last`` {pid: bytes} holds, read
 * through ``sched_fds`` {pid: fd} (both updated as fds and last are).  A process that did not run
 * made no fault and no mapping: the caller gates none where pages may have been taken from
 * processes that did not run (reclaim, swap: /proc/vmstat).
 *
 * A read at offset 0 of a seq_file makes its text anew (fs/seq_file.c), so a held descriptor
 * gives the process's stat now.  It stays bound to the process it was opened for (its struct
 * pid): once that one exits the read fails with ESRCH, whatever process has the number since,
 * and the file is opened again by its path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STAT_MAX 4096   /* a stat is under 1 KiB: the name is at most 64 bytes, the rest numbers */

static int by_value(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* The numbered entries of ``proc``, ascending, in a malloc'd array; NULL with an exception set. */
static long *list_pids(const char *proc, Py_ssize_t *count)
{
    DIR *dir;
    struct dirent *e;
    long *pids = NULL;
    size_t n = 0, cap = 0;

    Py_BEGIN_ALLOW_THREADS
    dir = opendir(proc);
    Py_END_ALLOW_THREADS
    if (!dir) {
        PyErr_SetFromErrnoWithFilename(PyExc_OSError, proc);
        return NULL;
    }
    while ((e = readdir(dir)) != NULL) {
        const char *s = e->d_name;
        long pid = 0;
        int digits = 0;
        for (; *s >= '0' && *s <= '9' && digits < 10; s++, digits++)
            pid = pid * 10 + (*s - '0');
        if (*s || !digits || (digits > 1 && e->d_name[0] == '0'))
            continue;
        if (n == cap) {
            size_t more = cap ? 2 * cap : 4096;
            long *p = realloc(pids, more * sizeof *p);
            if (!p) {
                free(pids);
                closedir(dir);
                PyErr_NoMemory();
                return NULL;
            }
            pids = p;
            cap = more;
        }
        pids[n++] = pid;
    }
    closedir(dir);
    qsort(pids, n, sizeof *pids, by_value);
    *count = (Py_ssize_t)n;
    return pids ? pids : malloc(sizeof(long));
}

/* Open proc/PID/NAME: the descriptor (moved to ``floor`` or over where one is free there; *held
 * says whether it was), or -1. */
static int open_named(const char *proc, long pid, const char *name, int floor, int *held)
{
    char path[PATH_MAX];
    int fd, moved;

    *held = 0;
    if (snprintf(path, sizeof path, "%s/%ld/%s", proc, pid, name) >= (int)sizeof path)
        return -1;
    Py_BEGIN_ALLOW_THREADS
    fd = open(path, O_RDONLY | O_CLOEXEC);
    Py_END_ALLOW_THREADS
    if (fd < 0)
        return -1;
    moved = fcntl(fd, F_DUPFD_CLOEXEC, floor);
    if (moved >= 0) {
        close(fd);
        *held = 1;
        return moved;
    }
    return fd;
}

static ssize_t pread_stat(int fd, char *buf)
{
    ssize_t got;
    Py_BEGIN_ALLOW_THREADS
    got = pread(fd, buf, STAT_MAX, 0);
    Py_END_ALLOW_THREADS
    return got;
}

/* Whether the process ``key`` has not run since its schedstat was last read: its schedstat, read
 * through the descriptor held in ``sched_fds`` (opened where none is), is the one ``sched_last``
 * holds (which is updated).  0 where it ran, where it cannot be read, or where the kernel keeps
 * no run time (schedstats off: "0 0 0"); -1 with an exception set. */
static int not_run(const char *proc, long pid, PyObject *key, PyObject *sched_fds, PyObject *sched_last, int floor)
{
    char buf[256];
    ssize_t got = -1;
    int fd, held = 0, same;
    PyObject *fd_obj = PyDict_GetItemWithError(sched_fds, key), *before, *now;

    if (fd_obj) {
        fd = (int)PyLong_AsLong(fd_obj);
        if (fd == -1 && PyErr_Occurred())
            return -1;
        Py_BEGIN_ALLOW_THREADS
        got = pread(fd, buf, sizeof buf, 0);
        Py_END_ALLOW_THREADS
        if (got <= 0) {
            close(fd);
            if (PyDict_DelItem(sched_fds, key) < 0)
                return -1;
        }
    } else if (PyErr_Occurred()) {
        return -1;
    }
    if (got <= 0) {
        fd = open_named(proc, pid, "schedstat", floor, &held);
        if (fd < 0)
            return 0;
        Py_BEGIN_ALLOW_THREADS
        got = pread(fd, buf, sizeof buf, 0);
        Py_END_ALLOW_THREADS
        if (got > 0 && held) {
            PyObject *v = PyLong_FromLong(fd);
            if (!v || PyDict_SetItem(sched_fds, key, v) < 0) {
                Py_XDECREF(v);
                close(fd);
                return -1;
            }
            Py_DECREF(v);
        } else {
            close(fd);
        }
    }
    if (got <= 0 || buf[0] == '0')
        return 0;
    before = PyDict_GetItemWithError(sched_last, key);
    if (!before && PyErr_Occurred())
        return -1;
    same = before && PyBytes_Check(before) && PyBytes_GET_SIZE(before) == got &&
           memcmp(PyBytes_AS_STRING(before), buf, (size_t)got) == 0;
    if (same)
        return 1;
    now = PyBytes_FromStringAndSize(buf, got);
    if (!now || PyDict_SetItem(sched_last, key, now) < 0) {
        Py_XDECREF(now);
        return -1;
    }
    Py_DECREF(now);
    return 0;
}

static PyObject *scan(PyObject *self, PyObject *args)
{
    const char *proc;
    PyObject *fds, *last, *pid_list = NULL, *changed = NULL, *result = NULL;
    PyObject *gated = Py_None, *sched_fds = NULL, *sched_last = NULL;
    int floor;
    long *pids;
    Py_ssize_t count, i;
    char buf[STAT_MAX];

    if (!PyArg_ParseTuple(args, "sO!O!i|OO!O!", &proc, &PyDict_Type, &fds, &PyDict_Type, &last, &floor,
                          &gated, &PyDict_Type, &sched_fds, &PyDict_Type, &sched_last))
        return NULL;
    if (gated != Py_None && (!PyAnySet_Check(gated) || !sched_fds || !sched_last)) {
        PyErr_SetString(PyExc_TypeError, "gated: a set, with sched_fds and sched_last");
        return NULL;
    }
    pids = list_pids(proc, &count);
    if (!pids)
        return NULL;
    pid_list = PyList_New(count);
    changed = PyList_New(0);
    if (!pid_list || !changed)
        goto done;
    for (i = 0; i < count; i++) {
        PyObject *key = PyLong_FromLong(pids[i]), *fd_obj, *before, *now;
        ssize_t got = -1;
        int fd = -1, held = 0;

        if (!key)
            goto done;
        PyList_SET_ITEM(pid_list, i, key);  /* (the list holds the reference) */
        if (gated != Py_None) {
            int is_gated = PySet_Contains(gated, key), quiet;
            if (is_gated < 0)
                goto done;
            if (is_gated) {
                quiet = not_run(proc, pids[i], key, sched_fds, sched_last, floor);
                if (quiet < 0)
                    goto done;
                if (quiet)
                    continue;  /* (it has not run: its stat is the one ``last`` holds) */
            }
        }
        fd_obj = PyDict_GetItemWithError(fds, key);
        if (fd_obj) {
            fd = (int)PyLong_AsLong(fd_obj);
            if (fd == -1 && PyErr_Occurred())
                goto done;
            got = pread_stat(fd, buf);
            if (got <= 0) {  /* gone (ESRCH), or its number is another process's now: open anew */
                close(fd);
                if (PyDict_DelItem(fds, key) < 0)
                    goto done;
            }
        } else if (PyErr_Occurred()) {
            goto done;
        }
        if (got <= 0) {
            fd = open_named(proc, pids[i], "stat", floor, &held);
            if (fd >= 0) {
                got = pread_stat(fd, buf);
                if (got > 0 && held) {
                    PyObject *v = PyLong_FromLong(fd);
                    if (!v || PyDict_SetItem(fds, key, v) < 0) {
                        Py_XDECREF(v);
                        close(fd);
                        goto done;
                    }
                    Py_DECREF(v);
                } else {
                    close(fd);
                }
            }
        }
        before = PyDict_GetItemWithError(last, key);
        if (!before && PyErr_Occurred())
            goto done;
        if (got <= 0) {
            if (before) {
                PyObject *pair = Py_BuildValue("(OO)", key, Py_None);
                if (!pair || PyList_Append(changed, pair) < 0 || PyDict_DelItem(last, key) < 0) {
                    Py_XDECREF(pair);
                    goto done;
                }
                Py_DECREF(pair);
            }
            continue;
        }
        if (before && PyBytes_Check(before) && PyBytes_GET_SIZE(before) == got &&
                memcmp(PyBytes_AS_STRING(before), buf, (size_t)got) == 0)
            continue;
        now = PyBytes_FromStringAndSize(buf, got);
        if (!now)
            goto done;
        {
            PyObject *pair = PyTuple_Pack(2, key, now);
            int failed = !pair || PyList_Append(changed, pair) < 0 || PyDict_SetItem(last, key, now) < 0;
            Py_XDECREF(pair);
            Py_DECREF(now);
            if (failed)
                goto done;
        }
    }
    result = PyTuple_Pack(2, pid_list, changed);
done:
    free(pids);
    Py_XDECREF(pid_list);
    Py_XDECREF(changed);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "(pids, changed) of proc: every stat read through held descriptors."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_stat_fds", NULL, -1, methods};

PyMODINIT_FUNC PyInit__stat_fds(void)
{
    return PyModule_Create(&module);
}
