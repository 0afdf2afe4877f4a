/* Optional C implementation of the step of smem.exact.scanned that turns a process's
 * PAGEMAP_SCAN regions into its distinct frames: the pagemap reads, the entries of the regions
 * picked out, sorted and counted.  It gives what scanned._distinct_python gives (the
 * numpy code, used where this is not built, or with SMEM_PURE_PYTHON=1), with the same results
 * (tests/test_exact_scanned.py runs both on live processes): one call a process instead of
 * some fifty small numpy operations.
 *
 *   frames(fd, regions, page_size, read_across, exclusive)
 *     -> None where a read came back short (the process exited), else
 *        (pfns, counts, swap, own, entries, wide)
 *
 * fd: an open /proc/PID/pagemap.  regions: a C-contiguous buffer of uint64 rows (start, end,
 * categories) as PAGEMAP_SCAN returns them, in address order.  Runs of regions less than
 * read_across pages apart are read with one pread each (in pieces of at most CHUNK entries),
 * and only the entries inside the regions are looked at.  Documentation/admin-guide/mm/
 * pagemap.rst: bit 63 present, bit 62 swapped, bit 56 exclusively mapped, bits 0-54 the PFN
 * (or swap type and offset).
 *
 * pfns: bytearray of the distinct PFNs of present pages, ascending, uint32 where the largest
 * fits (wide False) else uint64; counts: bytearray of uint32, how many of the process's pages
 * map each, or None where each is mapped once; swap: bytearray of the distinct swap entries
 * (uint64, ascending); own: bytearray of the distinct frames (uint64, ascending) whose entry
 * says exclusively mapped, left out of pfns (empty unless exclusive is true): the accounting
 * lists again any that another process maps by the time it is read; entries: how many entries
 * the regions held.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (1 << 16)                  /* entries read at most at once (512 KiB) */
#define PFN_MASK ((UINT64_C(1) << 55) - 1)
#define PRESENT (UINT64_C(1) << 63)
#define SWAPPED (UINT64_C(1) << 62)
#define EXCLUSIVE (UINT64_C(1) << 56)

typedef struct {
    uint64_t *v;
    size_t n, cap;
} vec_t;

static int push(vec_t *a, uint64_t x)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 1024;
        uint64_t *v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return -1;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

/* Sort v[0:n] ascending: least significant digit first, 8 bits a pass, only as many passes as
 * the largest value has bytes; tmp holds n values. */
static void radix_sort(uint64_t *v, uint64_t *tmp, size_t n)
{
    uint64_t top = 0;
    for (size_t i = 0; i < n; i++)
        top |= v[i];
    uint64_t *src = v, *dst = tmp;
    for (int shift = 0; shift < 64 && (top >> shift); shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[((src[i] >> shift) & 0xff) + 1]++;
        for (int d = 0; d < 256; d++)
            count[d + 1] += count[d];
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i] >> shift) & 0xff]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * sizeof *v);
}

/* Sort a's values; tmp (at least a->n values) is scratch. */
static void sorted_in_place(vec_t *a, uint64_t *tmp)
{
    if (a->n < 32) {  /* insertion sort: few values */
        for (size_t i = 1; i < a->n; i++) {
            uint64_t x = a->v[i];
            size_t j = i;
            for (; j > 0 && a->v[j - 1] > x; j--)
                a->v[j] = a->v[j - 1];
            a->v[j] = x;
        }
        return;
    }
    radix_sort(a->v, tmp, a->n);
}

static PyObject *bytes_of(const void *p, size_t size)
{
    return PyByteArray_FromStringAndSize((const char *)p, (Py_ssize_t)size);
}

static PyObject *frames(PyObject *self, PyObject *args)
{
    int fd, exclusive;
    Py_buffer regions;
    unsigned long long page_size, read_across;
    if (!PyArg_ParseTuple(args, "iy*KKp", &fd, &regions, &page_size, &read_across, &exclusive))
        return NULL;
    PyObject *result = NULL;
    vec_t shared = {0}, mine = {0}, swap = {0};
    uint64_t *buf = NULL, *tmp = NULL;
    size_t nreg = regions.len / (3 * sizeof(uint64_t)), entries = 0;
    const uint64_t *r = regions.buf;
    int gone = 0;
    if (page_size == 0 || regions.len % (3 * sizeof(uint64_t))) {
        PyErr_SetString(PyExc_ValueError, "regions: rows of three uint64, and a page size");
        goto done;
    }
    buf = malloc(CHUNK * sizeof *buf);
    if (!buf) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (size_t i = 0; i < nreg && !gone;) {
        size_t j = i + 1;  /* the run: regions i..j-1 */
        while (j < nreg && r[3 * j] / page_size - r[3 * (j - 1) + 1] / page_size <= read_across)
            j++;
        uint64_t lo = r[3 * i] / page_size, hi = r[3 * (j - 1) + 1] / page_size;
        size_t k = i;  /* the first region not wholly before the piece read */
        for (uint64_t off = lo; off < hi && !gone; off += CHUNK) {
            uint64_t n = hi - off < CHUNK ? hi - off : CHUNK;
            ssize_t got = pread(fd, buf, n * 8, (off_t)(off * 8));
            if (got < 0) {
                gone = -1;  /* errno says why */
                break;
            }
            if ((uint64_t)got != n * 8) {
                gone = 1;  /* the mm is gone: the process exited */
                break;
            }
            for (size_t m = k; m < j; m++) {
                uint64_t first = r[3 * m] / page_size, end = r[3 * m + 1] / page_size;
                if (first >= off + n)
                    break;
                if (end <= off) {
                    k = m + 1;
                    continue;
                }
                uint64_t a = first > off ? first : off, b = end < off + n ? end : off + n;
                entries += b - a;
                for (uint64_t p = a; p < b; p++) {
                    uint64_t e = buf[p - off];
                    int failed;
                    if (e & PRESENT)
                        failed = push(exclusive && (e & EXCLUSIVE) ? &mine : &shared, e & PFN_MASK);
                    else if (e & SWAPPED)
                        failed = push(&swap, e & PFN_MASK);
                    else
                        continue;
                    if (failed) {
                        errno = ENOMEM;
                        gone = -1;
                        break;
                    }
                }
                if (gone)
                    break;
            }
        }
        i = j;
    }
    Py_END_ALLOW_THREADS
    if (gone < 0) {
        if (errno == ENOMEM)
            PyErr_NoMemory();
        else
            PyErr_SetFromErrno(PyExc_OSError);
        goto done;
    }
    if (gone) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    size_t most = shared.n > mine.n ? shared.n : mine.n;
    most = most > swap.n ? most : swap.n;
    tmp = malloc((most ? most : 1) * sizeof *tmp);
    if (!tmp) {
        PyErr_NoMemory();
        goto done;
    }
    sorted_in_place(&shared, tmp);
    sorted_in_place(&mine, tmp);
    sorted_in_place(&swap, tmp);
    size_t own = mine.n ? 1 : 0, nswap = swap.n ? 1 : 0, distinct = 0;
    for (size_t i = 1; i < mine.n; i++)
        if (mine.v[i] != mine.v[i - 1])
            mine.v[own++] = mine.v[i];
    for (size_t i = 1; i < swap.n; i++)
        if (swap.v[i] != swap.v[i - 1])
            swap.v[nswap++] = swap.v[i];
    /* distinct PFNs in shared.v[0:distinct], each one's count in counts (tmp, as uint32) */
    uint32_t *counts = (uint32_t *)tmp;
    int repeated = 0;
    for (size_t i = 0; i < shared.n; i++) {
        if (distinct && shared.v[distinct - 1] == shared.v[i]) {
            counts[distinct - 1]++;
            repeated = 1;
        } else {
            shared.v[distinct] = shared.v[i];
            counts[distinct++] = 1;
        }
    }
    int wide = distinct && shared.v[distinct - 1] >= (UINT64_C(1) << 32);
    PyObject *pfns;
    if (distinct && !wide) {
        pfns = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(distinct * 4));
        if (pfns) {
            uint32_t *out = (uint32_t *)PyByteArray_AS_STRING(pfns);
            for (size_t i = 0; i < distinct; i++)
                out[i] = (uint32_t)shared.v[i];
        }
    } else {
        pfns = bytes_of(shared.v, distinct * 8);
        wide = 1;
    }
    PyObject *counted = repeated ? bytes_of(counts, distinct * 4) : (Py_INCREF(Py_None), Py_None);
    PyObject *swapped = bytes_of(swap.v, nswap * 8);
    PyObject *owned = bytes_of(mine.v, own * 8);
    if (pfns && counted && swapped && owned)
        result = Py_BuildValue("(OOOOnO)", pfns, counted, swapped, owned, (Py_ssize_t)entries,
                               wide ? Py_True : Py_False);
    Py_XDECREF(pfns);
    Py_XDECREF(counted);
    Py_XDECREF(swapped);
    Py_XDECREF(owned);
done:
    free(buf);
    free(tmp);
    free(shared.v);
    free(mine.v);
    free(swap.v);
    PyBuffer_Release(&regions);
    return result;
}

static PyMethodDef methods[] = {
    {"frames", frames, METH_VARARGS, "A process's distinct frames from its PAGEMAP_SCAN regions."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_frames", NULL, -1, methods};

PyMODINIT_FUNC PyInit__frames(void)
{
    return PyModule_Create(&module);
}
