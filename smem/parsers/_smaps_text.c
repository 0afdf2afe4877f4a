/* The C smaps parser's reading of the text: headers, counter values, the counters kept, names
 * (what smaps._header, Counters._find, Counters.kept and _header's name give).
 */
#include "_smaps.h"

/* "HEX-HEX[ \t]" at p (the header regex, without its newline) */
int header_at(const char *p, const char *end)
{
    const char *q = p;
    while (q < end && is_hex((unsigned char)*q))
        q++;
    if (q == p || q >= end || *q != '-')
        return 0;
    p = ++q;
    while (q < end && is_hex((unsigned char)*q))
        q++;
    return q > p && q < end && (*q == ' ' || *q == '\t');
}

/* Split one header line as line.split(None, 5) would, check it as smaps._header does.
 * Returns 1 if well formed (name bounds set), 0 if not. */
int check_header(const char *data, Span *s)
{
    const char *p = data + s->start, *end = data + s->eol;
    const char *f[5], *fe[5];
    for (int k = 0; k < 5; k++) {
        while (p < end && is_ws((unsigned char)*p))
            p++;
        if (p >= end)
            return 0;
        f[k] = p;
        while (p < end && !is_ws((unsigned char)*p))
            p++;
        fe[k] = p;
    }
    for (const char *c = f[2]; c < fe[2]; c++)
        if (!is_hex((unsigned char)*c))
            return 0;
    for (const char *c = f[4]; c < fe[4]; c++)
        if (*c < '0' || *c > '9')
            return 0;
    while (p < end && is_ws((unsigned char)*p))
        p++;
    const char *ne = end;
    while (ne > p && ne[-1] == '\r')
        ne--;
    s->name_lo = p - data;
    s->name_hi = ne - data;
    return 1;
}

/* int() of the text of a value scan_value could not read */
PyObject *value_of_text(const char *v, const char *ve)
{
    PyObject *text = PyBytes_FromStringAndSize(v, ve - v);
    if (text == NULL)
        return NULL;
    PyObject *value = PyObject_CallOneArg((PyObject *)&PyLong_Type, text);
    Py_DECREF(text);
    return value;
}

/* The value of a "KEY:" line found at hit if it ends in kB, as Counters._find reads it.
 * Returns a new reference, Py_None (new reference) if it is no counter, NULL on error. */
PyObject *value_at(const char *data, Py_ssize_t hi, const char *hit, Py_ssize_t nlen)
{
    long long n;
    const char *v, *ve;
    switch (scan_value(data, hi, hit, nlen, &n, &v, &ve)) {
    case 0:
        Py_RETURN_NONE;
    case 1:
        return PyLong_FromLongLong(n);
    default:
        return value_of_text(v, ve);
    }
}

/* Counters._find: the value of the first "\nKEY:" in data[lo:hi] if it ends in kB. */
PyObject *find_value(const char *data, Py_ssize_t lo, Py_ssize_t hi,
                            const char *needle, Py_ssize_t nlen)
{
    if (hi - lo < nlen)
        Py_RETURN_NONE;
    const char *hit = memmem(data + lo, (size_t)(hi - lo), needle, (size_t)nlen);
    if (hit == NULL)
        Py_RETURN_NONE;
    return value_at(data, hi, hit, nlen);
}

void keys_free(Keys *k)
{
    if (k->needles) {
        for (Py_ssize_t i = 0; i < k->n; i++)
            PyMem_Free(k->needles[i]);
        PyMem_Free(k->needles);
    }
    PyMem_Free(k->lens);
    k->needles = NULL;
    k->lens = NULL;
}

int keys_init(Keys *k, PyObject *keys)
{
    k->keys = keys;
    k->n = 0;
    k->needles = NULL;
    k->lens = NULL;
    memset(k->by_first, 0, sizeof k->by_first);
    if (!PyTuple_Check(keys)) {
        PyErr_SetString(PyExc_TypeError, "keys must be a tuple");
        return -1;
    }
    k->n = PyTuple_GET_SIZE(keys);
    k->needles = PyMem_Calloc((size_t)k->n + 1, sizeof(char *));
    k->lens = PyMem_Calloc((size_t)k->n + 1, sizeof(Py_ssize_t));
    if (!k->needles || !k->lens) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < k->n; i++) {
        PyObject *ascii = PyUnicode_AsASCIIString(PyTuple_GET_ITEM(keys, i));  /* key.encode("ascii") */
        if (ascii == NULL)
            return -1;
        Py_ssize_t len = PyBytes_GET_SIZE(ascii);
        k->needles[i] = PyMem_Malloc((size_t)len + 2);
        if (k->needles[i] == NULL) {
            Py_DECREF(ascii);
            PyErr_NoMemory();
            return -1;
        }
        k->needles[i][0] = '\n';
        memcpy(k->needles[i] + 1, PyBytes_AS_STRING(ascii), (size_t)len);
        k->needles[i][len + 1] = ':';
        k->lens[i] = len + 2;
        if (i < MAX_KEYS)
            k->by_first[(unsigned char)k->needles[i][1]] |= 1ULL << i;
        Py_DECREF(ascii);
    }
    return 0;
}

/* Counters(...).kept(keys), a search for each key (more keys than kept() walks for at once) */
static PyObject *kept_by_search(const char *data, const Span *s, const Keys *k)
{
    PyObject *d = PyDict_New();
    if (d == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < k->n; i++) {
        PyObject *value = find_value(data, s->eol, s->hi, k->needles[i], k->lens[i]);
        if (value == NULL) {
            Py_DECREF(d);
            return NULL;
        }
        int rc = value == Py_None ? 0 : PyDict_SetItem(d, PyTuple_GET_ITEM(k->keys, i), value);
        Py_DECREF(value);
        if (rc < 0) {
            Py_DECREF(d);
            return NULL;
        }
    }
    return d;
}

PyObject *kept(const char *data, const Span *s, const Keys *k)
{
    const char *hits[MAX_KEYS];
    if (k->n > MAX_KEYS)
        return kept_by_search(data, s, k);
    find_hits(data, s, k, hits);
    PyObject *d = PyDict_New();
    if (d == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < k->n; i++) {
        PyObject *value = hits[i] ? value_at(data, s->hi, hits[i], k->lens[i]) : (Py_INCREF(Py_None), Py_None);
        if (value == NULL)
            goto fail;
        if (value != Py_None && PyDict_SetItem(d, PyTuple_GET_ITEM(k->keys, i), value) < 0) {
            Py_DECREF(value);
            goto fail;
        }
        Py_DECREF(value);
    }
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

/* The name of the mapping at s (a new reference): decoded once for a run of mappings of one
 * name (a file's come one after another), interned; the anonymous name where it is empty. */
PyObject *name_at(const char *data, const Span *s, PyObject *anonymous, PrevName *prev)
{
    Py_ssize_t name_len = s->name_hi - s->name_lo;
    if (prev->name != NULL && name_len == prev->len
            && memcmp(data + s->name_lo, data + prev->lo, (size_t)name_len) == 0) {
        Py_INCREF(prev->name);
        return prev->name;
    }
    if (name_len == 0) {
        Py_INCREF(anonymous);
        return anonymous;
    }
    PyObject *name = PyUnicode_DecodeUTF8(data + s->name_lo, name_len, "surrogateescape");
    if (name == NULL)
        return NULL;
    PyUnicode_InternInPlace(&name);
    Py_INCREF(name);
    Py_XSETREF(prev->name, name);
    prev->lo = s->name_lo;
    prev->len = name_len;
    return name;
}
