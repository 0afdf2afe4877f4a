/* The C smaps parser's sums by mapping name (smaps.sum_smaps_by_name): each name's sums, its
 * fields' values and whether its first mapping is shared, and the process's totals.
 */
#include "_smaps.h"

/* The fields' values of one name's sums: each field the sum of its counters present, None where
 * none is (absent is not zero).  fields[f] lists indices into the keys, -1 ending each list. */
static PyObject *field_values(const Sums *t, const Keys *k, const Py_ssize_t *fields, Py_ssize_t nfields)
{
    PyObject *values = PyTuple_New(nfields);
    if (values == NULL)
        return NULL;
    for (Py_ssize_t f = 0; f < nfields; f++, fields++) {
        PyObject *acc = NULL;
        for (; *fields >= 0; fields++) {
            PyObject *value = sums_value(t, k, *fields);
            if (value == NULL) {
                if (PyErr_Occurred())
                    goto fail;
                continue;
            }
            if (acc == NULL) {
                acc = value;
                continue;
            }
            Py_SETREF(acc, PyNumber_Add(acc, value));
            Py_DECREF(value);
            if (acc == NULL)
                goto fail;
        }
        PyTuple_SET_ITEM(values, f, acc ? acc : (Py_INCREF(Py_None), Py_None));
    }
    return values;
fail:
    Py_DECREF(values);
    return NULL;
}

/* The fields as index lists into the keys (a key not kept left out), each ended by -1. */
static Py_ssize_t *fields_init(PyObject *fields, const Keys *k, Py_ssize_t *nfields)
{
    if (!PyTuple_Check(fields)) {
        PyErr_SetString(PyExc_TypeError, "fields must be a tuple of tuples of str");
        return NULL;
    }
    *nfields = PyTuple_GET_SIZE(fields);
    Py_ssize_t size = *nfields;
    for (Py_ssize_t f = 0; f < *nfields; f++) {
        PyObject *field = PyTuple_GET_ITEM(fields, f);
        if (!PyTuple_Check(field)) {
            PyErr_SetString(PyExc_TypeError, "fields must be a tuple of tuples of str");
            return NULL;
        }
        size += PyTuple_GET_SIZE(field);
    }
    Py_ssize_t *out = PyMem_Malloc((size_t)(size + 1) * sizeof(Py_ssize_t)), *p = out;
    if (out == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t f = 0; f < *nfields; f++) {
        PyObject *field = PyTuple_GET_ITEM(fields, f);
        for (Py_ssize_t c = 0; c < PyTuple_GET_SIZE(field); c++) {
            for (Py_ssize_t i = 0; i < k->n; i++) {
                int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(field, c), PyTuple_GET_ITEM(k->keys, i), Py_EQ);
                if (eq < 0) {
                    PyMem_Free(out);
                    return NULL;
                }
                if (eq) {
                    *p++ = i;
                    break;
                }
            }
        }
        *p++ = -1;
    }
    return out;
}

/* Whether the mapping at s is shared: an 's' in its permissions (its header's second field). */
static int is_shared(const char *data, const Span *s)
{
    const char *p = data + s->start, *end = data + s->eol;
    while (p < end && !is_ws((unsigned char)*p))
        p++;
    while (p < end && is_ws((unsigned char)*p))
        p++;
    for (; p < end && !is_ws((unsigned char)*p); p++)
        if (*p == 's')
            return 1;
    return 0;
}

/* The kept counters summed by mapping name, and over all mappings:
 * ([(name, first index, mappings, sums, values, shared)], totals), the names in the order they
 * first appear, values the fields' (field_values), shared whether its first mapping is. */
PyObject *sums_by_name(const char *data, const Span *spans, Py_ssize_t count, const Keys *use,
                              PyObject *fields, PyObject *anonymous)
{
    PyObject *index_of = PyDict_New(), *rows = NULL, *result = NULL;
    PyObject **names = NULL;
    Sums *sums = NULL, *totals = NULL;
    Py_ssize_t *counts = NULL, *firsts = NULL, *field_keys = NULL, n = 0, cap = 0, nfields = 0, last = -1;
    char *shared = NULL;
    PrevName prev = {0};
    if (index_of == NULL || (field_keys = fields_init(fields, use, &nfields)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        const Span *s = &spans[i];
        PyObject *name = name_at(data, s, anonymous, &prev);
        if (name == NULL)
            goto done;
        Py_ssize_t j;
        if (last >= 0 && names[last] == name) {  /* (a run of one name's mappings) */
            j = last;
        } else {
            PyObject *at = PyDict_GetItemWithError(index_of, name);  /* borrowed */
            if (at == NULL && PyErr_Occurred()) {
                Py_DECREF(name);
                goto done;
            }
            if (at != NULL) {
                j = PyLong_AsSsize_t(at);
            } else {
                if (n == cap) {
                    Py_ssize_t grown_cap = cap ? cap * 2 : 16;
                    Sums *grown = PyMem_Realloc(sums, (size_t)grown_cap * sizeof(Sums));
                    if (grown)
                        sums = grown;
                    Py_ssize_t *c = grown ? PyMem_Realloc(counts, (size_t)grown_cap * sizeof(Py_ssize_t)) : NULL;
                    if (c)
                        counts = c;
                    Py_ssize_t *f = c ? PyMem_Realloc(firsts, (size_t)grown_cap * sizeof(Py_ssize_t)) : NULL;
                    if (f)
                        firsts = f;
                    PyObject **o = f ? PyMem_Realloc(names, (size_t)grown_cap * sizeof(PyObject *)) : NULL;
                    if (o)
                        names = o;
                    char *sh = o ? PyMem_Realloc(shared, (size_t)grown_cap) : NULL;
                    if (sh)
                        shared = sh;
                    if (sh == NULL) {
                        Py_DECREF(name);
                        PyErr_NoMemory();
                        goto done;
                    }
                    memset(sums + cap, 0, (size_t)(grown_cap - cap) * sizeof(Sums));
                    cap = grown_cap;
                }
                j = n;
                PyObject *number = PyLong_FromSsize_t(j);
                int rc = number ? PyDict_SetItem(index_of, name, number) : -1;
                Py_XDECREF(number);
                if (rc < 0 || sums_init(&sums[j], use) < 0) {
                    Py_DECREF(name);
                    goto done;
                }
                n++;
                counts[j] = 0;
                firsts[j] = i;
                shared[j] = (char)is_shared(data, s);
                Py_INCREF(name);
                names[j] = name;
            }
        }
        Py_DECREF(name);
        last = j;
        counts[j]++;
        if (sums_add(&sums[j], data, s, use) < 0)
            goto done;
    }
    if ((totals = sums_new(use)) == NULL)
        goto done;
    if ((rows = PyList_New(n)) == NULL)
        goto done;
    for (Py_ssize_t j = 0; j < n; j++) {
        if (sums_merge(totals, &sums[j], use) < 0)
            goto done;
        PyObject *d = sums_dict(&sums[j], use), *values = d ? field_values(&sums[j], use, field_keys, nfields) : NULL;
        PyObject *row = values ? Py_BuildValue("(OnnNNO)", names[j], firsts[j], counts[j], d, values,
                                               shared[j] ? Py_True : Py_False) : NULL;
        if (row == NULL) {
            if (values == NULL)
                Py_XDECREF(d);
            goto done;
        }
        PyList_SET_ITEM(rows, j, row);
    }
    PyObject *total = sums_dict(totals, use);
    if (total != NULL)
        result = Py_BuildValue("(ON)", rows, total);
done:
    for (Py_ssize_t j = 0; j < n; j++) {
        sums_free(&sums[j]);
        Py_DECREF(names[j]);
    }
    sums_delete(totals);
    PyMem_Free(sums);
    PyMem_Free(counts);
    PyMem_Free(firsts);
    PyMem_Free(names);
    PyMem_Free(shared);
    PyMem_Free(field_keys);
    Py_XDECREF(prev.name);
    Py_XDECREF(index_of);
    Py_XDECREF(rows);
    return result;
}
