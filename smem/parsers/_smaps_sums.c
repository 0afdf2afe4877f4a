/* The C smaps parser's sums of the counters kept, in C integers while they fit (a key no mapping
 * has stays absent; keys in the order first found, as the Python sums insert them).
 */
#include "_smaps.h"

/* Empty sums of the keys k: C integers for each (one block), a dict where they are too many. */
int sums_init(Sums *t, const Keys *k)
{
    memset(t, 0, sizeof *t);
    if (k->n > MAX_KEYS) {
        t->dict = PyDict_New();
        return t->dict ? 0 : -1;
    }
    if (k->n == 0)
        return 0;
    size_t n = (size_t)k->n;
    char *block = PyMem_Calloc(n, sizeof(long long) + sizeof(PyObject *) + sizeof(Py_ssize_t) + 1);
    if (block == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    t->n = k->n;
    t->sum = (long long *)block;
    t->big = (PyObject **)(block + n * sizeof(long long));
    t->order = (Py_ssize_t *)(block + n * (sizeof(long long) + sizeof(PyObject *)));
    t->present = block + n * (sizeof(long long) + sizeof(PyObject *) + sizeof(Py_ssize_t));
    return 0;
}

/* Add n, a C integer, to key i of sums kept in C integers (no dict) */
static int sums_add_ll(Sums *t, Py_ssize_t i, long long n)
{
    if (!t->present[i]) {
        t->present[i] = 1;
        t->order[t->n_present++] = i;
    }
    long long after;
    if (t->big[i] == NULL) {
        if (!__builtin_add_overflow(t->sum[i], n, &after)) {
            t->sum[i] = after;
            return 0;
        }
        t->big[i] = PyLong_FromLongLong(t->sum[i]);  /* (the sum before this value) */
        if (t->big[i] == NULL)
            return -1;
    }
    PyObject *value = PyLong_FromLongLong(n);
    PyObject *sum = value ? PyNumber_Add(t->big[i], value) : NULL;
    Py_XDECREF(value);
    if (sum == NULL)
        return -1;
    Py_SETREF(t->big[i], sum);
    return 0;
}

static int sums_add_object(Sums *t, const Keys *k, Py_ssize_t i, PyObject *value)
{
    if (t->dict) {
        PyObject *key = PyTuple_GET_ITEM(k->keys, i);
        PyObject *before = PyDict_GetItemWithError(t->dict, key);
        if (before == NULL && PyErr_Occurred())
            return -1;
        PyObject *after = before ? PyNumber_Add(before, value) : (Py_INCREF(value), value);
        if (after == NULL)
            return -1;
        int rc = PyDict_SetItem(t->dict, key, after);
        Py_DECREF(after);
        return rc;
    }
    if (!t->present[i]) {
        t->present[i] = 1;
        t->order[t->n_present++] = i;
    }
    if (t->big[i] == NULL) {
        int overflow = 0;
        long long n = PyLong_Check(value) ? PyLong_AsLongLongAndOverflow(value, &overflow) : (overflow = 1, 0);
        if (n == -1 && PyErr_Occurred())
            return -1;
        long long after;
        if (!overflow && !__builtin_add_overflow(t->sum[i], n, &after)) {
            t->sum[i] = after;
            return 0;
        }
        t->big[i] = PyLong_FromLongLong(t->sum[i]);  /* (the sum before this value) */
        if (t->big[i] == NULL)
            return -1;
    }
    PyObject *after = PyNumber_Add(t->big[i], value);
    if (after == NULL)
        return -1;
    Py_SETREF(t->big[i], after);
    return 0;
}

/* Add the mapping's kept counters (what kept() would put in its dict) to the sums. */
int sums_add(Sums *t, const char *data, const Span *s, const Keys *k)
{
    if (k->n <= MAX_KEYS) {  /* kept()'s values, in its order, without its dict */
        const char *hits[MAX_KEYS];
        find_hits(data, s, k, hits);
        for (Py_ssize_t i = 0; i < k->n; i++) {
            if (hits[i] == NULL)
                continue;
            long long n;
            const char *v, *ve;
            int found = scan_value(data, s->hi, hits[i], k->lens[i], &n, &v, &ve);
            if (found == 1) {
                if (sums_add_ll(t, i, n) < 0)
                    return -1;
                continue;
            }
            if (found == 0)
                continue;
            PyObject *value = value_of_text(v, ve);
            if (value == NULL)
                return -1;
            int rc = sums_add_object(t, k, i, value);
            Py_DECREF(value);
            if (rc < 0)
                return -1;
        }
        return 0;
    }
    PyObject *d = kept(data, s, k);
    if (d == NULL)
        return -1;
    int rc = 0;
    for (Py_ssize_t i = 0; i < k->n && rc == 0; i++) {
        PyObject *value = PyDict_GetItemWithError(d, PyTuple_GET_ITEM(k->keys, i));
        if (value != NULL)
            rc = sums_add_object(t, k, i, value);
        else if (PyErr_Occurred())
            rc = -1;
    }
    Py_DECREF(d);
    return rc;
}

PyObject *sums_dict(Sums *t, const Keys *k)
{
    if (t->dict) {
        Py_INCREF(t->dict);
        return t->dict;
    }
    PyObject *d = PyDict_New();
    if (d == NULL)
        return NULL;
    for (Py_ssize_t j = 0; j < t->n_present; j++) {
        Py_ssize_t i = t->order[j];
        PyObject *value = t->big[i] ? (Py_INCREF(t->big[i]), t->big[i]) : PyLong_FromLongLong(t->sum[i]);
        if (value == NULL || PyDict_SetItem(d, PyTuple_GET_ITEM(k->keys, i), value) < 0) {
            Py_XDECREF(value);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(value);
    }
    return d;
}

void sums_free(Sums *t)
{
    for (Py_ssize_t i = 0; i < t->n; i++)
        Py_CLEAR(t->big[i]);
    PyMem_Free(t->sum);  /* (the block) */
    t->sum = NULL;
    t->n = 0;
    Py_CLEAR(t->dict);
}

/* Empty sums of the keys k on the heap (NULL with the error set); sums_delete frees them. */
Sums *sums_new(const Keys *k)
{
    Sums *t = PyMem_Calloc(1, sizeof(Sums));
    if (t == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    if (sums_init(t, k) < 0) {
        sums_delete(t);
        return NULL;
    }
    return t;
}

void sums_delete(Sums *t)
{
    if (t) {
        sums_free(t);
        PyMem_Free(t);
    }
}

/* Add the sums `from` to `into` (one name's sums to a process's totals), keys in from's order. */
int sums_merge(Sums *into, const Sums *from, const Keys *k)
{
    if (from->dict) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(from->dict, &pos, &key, &value)) {
            PyObject *before = PyDict_GetItemWithError(into->dict, key);
            if (before == NULL && PyErr_Occurred())
                return -1;
            PyObject *after = before ? PyNumber_Add(before, value) : (Py_INCREF(value), value);
            int rc = after ? PyDict_SetItem(into->dict, key, after) : -1;
            Py_XDECREF(after);
            if (rc < 0)
                return -1;
        }
        return 0;
    }
    for (Py_ssize_t j = 0; j < from->n_present; j++) {
        Py_ssize_t i = from->order[j];
        long long after;
        if (from->big[i] == NULL && into->big[i] == NULL
                && !__builtin_add_overflow(into->sum[i], from->sum[i], &after)) {
            if (!into->present[i]) {
                into->present[i] = 1;
                into->order[into->n_present++] = i;
            }
            into->sum[i] = after;
            continue;
        }
        PyObject *value = from->big[i] ? (Py_INCREF(from->big[i]), from->big[i]) : PyLong_FromLongLong(from->sum[i]);
        int rc = value ? sums_add_object(into, k, i, value) : -1;
        Py_XDECREF(value);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* Key i of the sums as a new reference; NULL (no error set) where no mapping has it. */
PyObject *sums_value(const Sums *t, const Keys *k, Py_ssize_t i)
{
    if (t->dict) {
        PyObject *value = PyDict_GetItemWithError(t->dict, PyTuple_GET_ITEM(k->keys, i));
        Py_XINCREF(value);
        return value;
    }
    if (!t->present[i])
        return NULL;
    return t->big[i] ? (Py_INCREF(t->big[i]), t->big[i]) : PyLong_FromLongLong(t->sum[i]);
}
