/* Optional C implementation of smem.parsers.smaps' split into mappings and its
 * reading of the counters a report keeps.
 *
 * It does what smaps._parse_python and smaps._parse_kept_python do, with the
 * same results and the same errors (tests/test_smaps_speedups.py runs both on
 * every recorded smaps): anything out of the ordinary is handed to the Python
 * code that defines the behaviour (a malformed header to smaps._header, which
 * raises its ValueError; a counter value that is not plain digits to int()).
 *
 *   parse(data, keys, keys_without_pss, select, Mapping, Counters, header, anonymous)
 *     -> (list of Mapping, had_pss)
 *
 * keys None: each mapping gets Counters(data, lo, hi) (read lazily, in Python).
 * keys a tuple of str: each mapping gets the dict Counters(...).kept(keys) would
 * give; keys_without_pss instead where the first mapping has no Pss counter.
 * select None or a function of the name: mappings it is false for are dropped
 * before their counters are read.
 *
 * Mapping None (with keys): no mapping is made; the kept counters are summed instead
 *     -> (totals, had_pss, number of mappings), what smaps._sum_kept_python gives.
 *
 * A ninth argument, fields (with keys, no select): the kept counters are summed by mapping
 * name instead, each name's fields worked out (a field: the sum of the counters it names)
 *     -> ([(name, first index, mappings, sums, values, shared)], totals, mappings, had_pss),
 *        what smaps._sum_by_name_python gives.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  /* memmem */
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* bytes.split()/rstrip() whitespace (Py_ISSPACE on bytes) */
static inline int is_ws(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

static inline int is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* "HEX-HEX[ \t]" at p (the header regex, without its newline) */
static int header_at(const char *p, const char *end)
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

typedef struct {
    Py_ssize_t start, eol, hi;       /* header line data[start:eol]; counters data[eol:hi] */
    Py_ssize_t name_lo, name_hi;     /* the name, data[name_lo:name_hi] (empty: anonymous) */
} Span;

/* Split one header line as line.split(None, 5) would, check it as smaps._header does.
 * Returns 1 if well formed (name bounds set), 0 if not. */
static int check_header(const char *data, Span *s)
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

/* Where the value of a "KEY:" line found at hit (the needle "\nKEY:", nlen bytes, ends before hi)
 * is, as Counters._find reads it: 0 if the line does not end in kB (no counter); 1 with *n set
 * for the usual "   1234 kB"; 2 with the text int() is to judge in [*v, *ve). */
static int scan_value(const char *data, Py_ssize_t hi, const char *hit, Py_ssize_t nlen, long long *n,
                      const char **v_out, const char **ve_out)
{
    const char *v = hit + nlen, *end = data + hi;
    const char *nl = memchr(v, '\n', (size_t)(end - v));
    const char *ve = nl ? nl : end;
    while (ve > v && is_ws((unsigned char)ve[-1]))
        ve--;
    if (ve - v < 2 || ve[-2] != 'k' || ve[-1] != 'B')
        return 0;
    ve -= 2;
    /* the usual "   1234 ": the number int() would give; anything else is int()'s to judge */
    const char *c = v;
    while (c < ve && (*c == ' ' || *c == '\t'))
        c++;
    const char *d = c;
    long long value = 0;
    while (c < ve && *c >= '0' && *c <= '9' && c - d < 18)
        value = value * 10 + (*c++ - '0');
    const char *digits_end = c;
    while (c < ve && (*c == ' ' || *c == '\t'))
        c++;
    if (digits_end > d && c == ve && (digits_end == ve || digits_end[0] == ' ' || digits_end[0] == '\t')) {
        *n = value;
        return 1;
    }
    *v_out = v;
    *ve_out = ve;
    return 2;
}

/* int() of the text of a value scan_value could not read */
static PyObject *value_of_text(const char *v, const char *ve)
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
static PyObject *value_at(const char *data, Py_ssize_t hi, const char *hit, Py_ssize_t nlen)
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
static PyObject *find_value(const char *data, Py_ssize_t lo, Py_ssize_t hi,
                            const char *needle, Py_ssize_t nlen)
{
    if (hi - lo < nlen)
        Py_RETURN_NONE;
    const char *hit = memmem(data + lo, (size_t)(hi - lo), needle, (size_t)nlen);
    if (hit == NULL)
        Py_RETURN_NONE;
    return value_at(data, hi, hit, nlen);
}

#define MAX_KEYS 64

typedef struct {
    PyObject *keys;       /* tuple of str */
    Py_ssize_t n;
    char **needles;       /* "\nKEY:" */
    Py_ssize_t *lens;
    unsigned long long by_first[256];  /* at most MAX_KEYS keys: those starting with each byte, a bit each */
} Keys;

static void keys_free(Keys *k)
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

static int keys_init(Keys *k, PyObject *keys)
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

/* Counters(...).kept(keys).  Where the mapping's text holds "\nKEY:" first: one walk over its
 * lines, in order, finds for every key the first line that starts with "KEY:" (and ends before
 * hi), which is where data.find(b"\nKEY:", lo, hi) finds it (lo is at a newline, so every
 * newline in data[lo:hi] starts a line); it stops once every key is found. */
static void find_hits(const char *data, const Span *s, const Keys *k, const char **hits)
{
    Py_ssize_t missing = k->n;
    unsigned long long found = 0;
    const char *end = data + s->hi;
    for (Py_ssize_t i = 0; i < k->n; i++)
        hits[i] = NULL;
    for (const char *nl = data + s->eol; missing && nl < end;) {
        if (*nl != '\n')
            break;  /* (lo at the end of the data) */
        const char *line = nl + 1;
        /* the keys not found yet that start with this line's first byte (line <= end: at worst
         * the bytes object's closing NUL) */
        for (unsigned long long maybe = k->by_first[(unsigned char)*line] & ~found; maybe; maybe &= maybe - 1) {
            Py_ssize_t i = __builtin_ctzll(maybe);
            if (nl + k->lens[i] <= end && memcmp(line, k->needles[i] + 1, (size_t)k->lens[i] - 1) == 0) {
                hits[i] = nl;
                found |= 1ULL << i;
                missing--;
            }
        }
        nl = memchr(line, '\n', (size_t)(end - line));
        if (nl == NULL)
            break;
    }
}

static PyObject *kept(const char *data, const Span *s, const Keys *k)
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

/* The kept counters' sums over mappings, in C integers while they fit (a key no mapping has
 * stays absent; keys in the order first found, as the Python sum inserts them). */
typedef struct {
    long long *sum;            /* each of n keys (one block, sized by sums_init) */
    PyObject **big;            /* the sum as a Python int, once it no longer fits */
    char *present;
    Py_ssize_t *order, n_present, n;
    PyObject *dict;            /* more keys than MAX_KEYS: a dict summed in Python ints */
} Sums;

/* Empty sums of the keys k: C integers for each (one block), a dict where they are too many. */
static int sums_init(Sums *t, const Keys *k)
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
static int sums_add(Sums *t, const char *data, const Span *s, const Keys *k)
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

static PyObject *sums_dict(Sums *t, const Keys *k)
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

static void sums_free(Sums *t)
{
    for (Py_ssize_t i = 0; i < t->n; i++)
        Py_CLEAR(t->big[i]);
    PyMem_Free(t->sum);  /* (the block) */
    t->sum = NULL;
    t->n = 0;
    Py_CLEAR(t->dict);
}

/* The name of the mapping at s (a new reference): decoded once for a run of mappings of one
 * name (a file's come one after another), interned; the anonymous name where it is empty. */
typedef struct {
    PyObject *name;
    Py_ssize_t lo, len;
} PrevName;

static PyObject *name_at(const char *data, const Span *s, PyObject *anonymous, PrevName *prev)
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

/* Add the sums `from` to `into` (one name's sums to a process's totals), keys in from's order. */
static int sums_merge(Sums *into, const Sums *from, const Keys *k)
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
static PyObject *sums_value(const Sums *t, const Keys *k, Py_ssize_t i)
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
static PyObject *sums_by_name(const char *data, const Span *spans, Py_ssize_t count, const Keys *use,
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
    totals = PyMem_Calloc(1, sizeof(Sums));
    if (totals == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (sums_init(totals, use) < 0)
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
    if (totals) {
        sums_free(totals);
        PyMem_Free(totals);
    }
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

static PyObject *parse(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8 && nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "parse() takes 8 or 9 arguments");
        return NULL;
    }
    PyObject *bytes = args[0], *keys = args[1], *keys_without_pss = args[2], *select = args[3];
    PyObject *mapping_type = args[4], *counters_type = args[5], *header_fn = args[6], *anonymous = args[7];
    if (!PyBytes_Check(bytes)) {
        PyErr_SetString(PyExc_TypeError, "data must be bytes");
        return NULL;
    }
    const char *data = PyBytes_AS_STRING(bytes);
    Py_ssize_t size = PyBytes_GET_SIZE(bytes);
    const char *end = data + size;
    PyObject *result = NULL, *list = NULL;
    Span *spans = NULL;
    Py_ssize_t count = 0, cap = 0;
    Keys with = {0}, without = {0};
    int had_pss = 1;
    PrevName prev = {0};  /* the last name decoded, and where its bytes are */
    int summing = mapping_type == Py_None;
    int by_name = nargs == 9;
    Sums *sums = NULL;
    Py_ssize_t summed = 0;

    /* 1. where the mappings start: a header at offset 0, then after every newline */
    for (const char *p = data; p < end;) {
        if ((p == data || p[-1] == '\n') && header_at(p, end)) {
            if (count == cap) {
                cap = cap ? cap * 2 : 64;
                Span *grown = PyMem_Realloc(spans, (size_t)cap * sizeof(Span));
                if (grown == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                spans = grown;
            }
            spans[count++].start = p - data;
        }
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL)
            break;
        p = nl + 1;
    }
    /* 2. every header checked before any counter is read, as parse_smaps does */
    for (Py_ssize_t i = 0; i < count; i++) {
        Span *s = &spans[i];
        const char *nl = memchr(data + s->start, '\n', (size_t)(size - s->start));
        s->eol = nl ? nl - data : size;
        s->hi = i + 1 < count ? spans[i + 1].start - 1 : size;
        if (s->hi < s->eol)
            s->hi = s->eol;
        if (!check_header(data, s)) {
            PyObject *line = PyBytes_FromStringAndSize(data + s->start, s->eol - s->start);
            if (line == NULL)
                goto done;
            PyObject *r = PyObject_CallFunctionObjArgs(header_fn, line, Py_None, NULL);
            Py_DECREF(line);
            if (r == NULL)
                goto done;  /* the ValueError smaps._header raises */
            Py_DECREF(r);
            PyErr_SetString(PyExc_SystemError, "smaps header checks disagree");
            goto done;
        }
    }
    /* 3. the mappings */
    const Keys *use = NULL;
    if (keys != Py_None) {
        if (keys_init(&with, keys) < 0 || keys_init(&without, keys_without_pss) < 0)
            goto done;
        use = &with;
        if (count) {
            PyObject *pss = find_value(data, spans[0].eol, spans[0].hi, "\nPss:", 5);
            if (pss == NULL)
                goto done;
            had_pss = pss != Py_None;
            Py_DECREF(pss);
            if (!had_pss)
                use = &without;
        }
    }
    if (by_name) {
        if (use == NULL || select != Py_None) {
            PyErr_SetString(PyExc_TypeError, "summing by name takes keys and no select");
            goto done;
        }
        PyObject *named = sums_by_name(data, spans, count, use, args[8], anonymous);
        if (named != NULL) {
            result = Py_BuildValue("(OOnO)", PyTuple_GET_ITEM(named, 0), PyTuple_GET_ITEM(named, 1), count,
                                   had_pss ? Py_True : Py_False);
            Py_DECREF(named);
        }
        goto done;
    }
    if (summing) {
        if (use == NULL || select != Py_None) {
            PyErr_SetString(PyExc_TypeError, "summing takes keys and no select");
            goto done;
        }
        sums = PyMem_Calloc(1, sizeof(Sums));
        if (sums == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        if (sums_init(sums, use) < 0)
            goto done;
        for (Py_ssize_t i = 0; i < count; i++)
            if (sums_add(sums, data, &spans[i], use) < 0)
                goto done;
        summed = count;
        PyObject *totals = sums_dict(sums, use);
        if (totals == NULL)
            goto done;
        result = Py_BuildValue("(NOn)", totals, had_pss ? Py_True : Py_False, summed);
        goto done;
    }
    list = PyList_New(0);
    if (list == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        const Span *s = &spans[i];
        PyObject *name = name_at(data, s, anonymous, &prev);
        if (name == NULL)
            goto done;
        if (select != Py_None) {
            PyObject *r = PyObject_CallOneArg(select, name);
            int wanted = r ? PyObject_IsTrue(r) : -1;
            Py_XDECREF(r);
            if (wanted <= 0) {
                Py_DECREF(name);
                if (wanted < 0)
                    goto done;
                continue;
            }
        }
        PyObject *counters = use ? kept(data, s, use)
                                 : PyObject_CallFunction(counters_type, "Onn", bytes, s->eol, s->hi);
        PyObject *header = counters ? PyBytes_FromStringAndSize(data + s->start, s->eol - s->start) : NULL;
        PyObject *m = NULL;
        if (header) {
            PyObject *argv[3] = {header, name, counters};
            m = PyObject_Vectorcall(mapping_type, argv, 3, NULL);
        }
        Py_XDECREF(header);
        Py_XDECREF(counters);
        Py_DECREF(name);
        if (m == NULL)
            goto done;
        int rc = PyList_Append(list, m);
        Py_DECREF(m);
        if (rc < 0)
            goto done;
    }
    result = Py_BuildValue("(OO)", list, had_pss ? Py_True : Py_False);
done:
    if (sums) {
        sums_free(sums);
        PyMem_Free(sums);
    }
    Py_XDECREF(prev.name);
    Py_XDECREF(list);
    keys_free(&with);
    keys_free(&without);
    PyMem_Free(spans);
    return result;
}

/* find(data, lo, hi, needle): smaps._find_python, the lookup of one counter by a lazy Counters */
static PyObject *find(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4 || !PyBytes_Check(args[0]) || !PyBytes_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "find(data: bytes, lo, hi, needle: bytes)");
        return NULL;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(args[0]);
    Py_ssize_t lo = PyLong_AsSsize_t(args[1]), hi = PyLong_AsSsize_t(args[2]);
    if ((lo == -1 || hi == -1) && PyErr_Occurred())
        return NULL;
    /* bytes.find's clamping of a slice */
    if (lo < 0)
        lo = lo + size < 0 ? 0 : lo + size;
    if (hi < 0)
        hi = hi + size < 0 ? 0 : hi + size;
    if (hi > size)
        hi = size;
    if (lo > hi || PyBytes_GET_SIZE(args[3]) == 0 || PyBytes_AS_STRING(args[3])[0] != '\n')
        goto python;  /* nothing a Counters asks: the Python code decides */
    return find_value(PyBytes_AS_STRING(args[0]), lo, hi, PyBytes_AS_STRING(args[3]), PyBytes_GET_SIZE(args[3]));
python:;
    PyObject *smaps = PyImport_ImportModule("smem.parsers.smaps");
    if (smaps == NULL)
        return NULL;
    PyObject *r = PyObject_CallMethod(smaps, "_find_python", "OOOO", args[0], args[1], args[2], args[3]);
    Py_DECREF(smaps);
    return r;
}

static PyMethodDef methods[] = {
    {"find", (PyCFunction)(void (*)(void))find, METH_FASTCALL,
     "find(data, lo, hi, needle) -> the value of the first needle line in data[lo:hi] (kB), or None"},
    {"parse", (PyCFunction)(void (*)(void))parse, METH_FASTCALL,
     "parse(data, keys, keys_without_pss, select, Mapping, Counters, header, anonymous)"
     " -> (mappings, had_pss)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_smaps", "C implementation of smem.parsers.smaps' parse.", -1, methods,
};

PyMODINIT_FUNC PyInit__smaps(void)
{
    return PyModule_Create(&module);
}
