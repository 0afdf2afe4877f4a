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
 * A ninth argument, true (with keys, Mapping given, no select): the kept counters are summed
 * by mapping name instead, one Mapping made per name (its first, counters not kept)
 *     -> ({name: [first index, mappings, sums, Mapping]}, had_pss), what
 *        smaps._sum_by_name_python gives.
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

/* The value of a "KEY:" line found at hit (the needle "\nKEY:", nlen bytes, ends before hi)
 * if it ends in kB, as Counters._find reads it.
 * Returns a new reference, Py_None (new reference) if it is no counter, NULL on error. */
static PyObject *value_at(const char *data, Py_ssize_t hi, const char *hit, Py_ssize_t nlen)
{
    const char *v = hit + nlen, *end = data + hi;
    const char *nl = memchr(v, '\n', (size_t)(end - v));
    const char *ve = nl ? nl : end;
    while (ve > v && is_ws((unsigned char)ve[-1]))
        ve--;
    if (ve - v < 2 || ve[-2] != 'k' || ve[-1] != 'B')
        Py_RETURN_NONE;
    ve -= 2;
    /* the usual "   1234 ": the number int() would give; anything else is int()'s to judge */
    const char *c = v;
    while (c < ve && (*c == ' ' || *c == '\t'))
        c++;
    const char *d = c;
    long long n = 0;
    while (c < ve && *c >= '0' && *c <= '9' && c - d < 18)
        n = n * 10 + (*c++ - '0');
    const char *digits_end = c;
    while (c < ve && (*c == ' ' || *c == '\t'))
        c++;
    if (digits_end > d && c == ve && (digits_end == ve || digits_end[0] == ' ' || digits_end[0] == '\t'))
        return PyLong_FromLongLong(n);
    PyObject *text = PyBytes_FromStringAndSize(v, ve - v);
    if (text == NULL)
        return NULL;
    PyObject *value = PyObject_CallOneArg((PyObject *)&PyLong_Type, text);
    Py_DECREF(text);
    return value;
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

typedef struct {
    PyObject *keys;       /* tuple of str */
    Py_ssize_t n;
    char **needles;       /* "\nKEY:" */
    Py_ssize_t *lens;
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
        Py_DECREF(ascii);
    }
    return 0;
}

#define MAX_KEYS 64

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
    const char *end = data + s->hi;
    for (Py_ssize_t i = 0; i < k->n; i++)
        hits[i] = NULL;
    for (const char *nl = data + s->eol; missing && nl < end;) {
        if (*nl != '\n')
            break;  /* (lo at the end of the data) */
        const char *line = nl + 1;
        for (Py_ssize_t i = 0; i < k->n; i++) {
            if (hits[i] == NULL && k->needles[i][1] == *line && nl + k->lens[i] <= end
                    && memcmp(line, k->needles[i] + 1, (size_t)k->lens[i] - 1) == 0) {
                hits[i] = nl;
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
    long long sum[MAX_KEYS];
    PyObject *big[MAX_KEYS];   /* the sum as a Python int, once it no longer fits */
    int present[MAX_KEYS];
    Py_ssize_t order[MAX_KEYS], n_present;
    PyObject *dict;            /* more keys than MAX_KEYS: a dict summed in Python ints */
} Sums;

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
            PyObject *value = value_at(data, s->hi, hits[i], k->lens[i]);
            if (value == NULL)
                return -1;
            int rc = value == Py_None ? 0 : sums_add_object(t, k, i, value);
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
    for (Py_ssize_t i = 0; i < MAX_KEYS; i++)
        Py_CLEAR(t->big[i]);
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

/* The kept counters summed by mapping name: {name: [first index, mappings, sums, Mapping]},
 * the Mapping the name's first (header and name; its counters not kept). */
static PyObject *sums_by_name(const char *data, const Span *spans, Py_ssize_t count, const Keys *use,
                              PyObject *mapping_type, PyObject *anonymous)
{
    PyObject *groups = PyDict_New(), *result = NULL;
    Sums *sums = NULL;
    Py_ssize_t *counts = NULL, n = 0, cap = 0;
    PrevName prev = {0};
    if (groups == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        const Span *s = &spans[i];
        PyObject *name = name_at(data, s, anonymous, &prev);
        if (name == NULL)
            goto done;
        PyObject *entry = PyDict_GetItemWithError(groups, name);  /* borrowed */
        Py_ssize_t j;
        if (entry == NULL) {
            if (PyErr_Occurred()) {
                Py_DECREF(name);
                goto done;
            }
            if (n == cap) {
                Py_ssize_t grown_cap = cap ? cap * 2 : 16;
                Sums *grown = PyMem_Realloc(sums, (size_t)grown_cap * sizeof(Sums));
                Py_ssize_t *grown_counts = grown ? PyMem_Realloc(counts, (size_t)grown_cap * sizeof(Py_ssize_t)) : NULL;
                if (grown)
                    sums = grown;
                if (grown_counts)
                    counts = grown_counts;
                if (grown == NULL || grown_counts == NULL) {
                    Py_DECREF(name);
                    PyErr_NoMemory();
                    goto done;
                }
                memset(sums + cap, 0, (size_t)(grown_cap - cap) * sizeof(Sums));
                cap = grown_cap;
            }
            j = n++;
            counts[j] = 0;
            if (use->n > MAX_KEYS && (sums[j].dict = PyDict_New()) == NULL) {
                Py_DECREF(name);
                goto done;
            }
            PyObject *header = PyBytes_FromStringAndSize(data + s->start, s->eol - s->start);
            PyObject *m = NULL;
            if (header) {
                PyObject *argv[3] = {header, name, Py_None};
                m = PyObject_Vectorcall(mapping_type, argv, 3, NULL);
                Py_DECREF(header);
            }
            entry = m ? Py_BuildValue("[nnON]", i, j, Py_None, m) : NULL;
            if (entry == NULL || PyDict_SetItem(groups, name, entry) < 0) {
                Py_XDECREF(entry);
                Py_DECREF(name);
                goto done;
            }
            Py_DECREF(entry);  /* (the dict holds it) */
        } else {
            j = PyLong_AsSsize_t(PyList_GET_ITEM(entry, 1));
        }
        Py_DECREF(name);
        counts[j]++;
        if (sums_add(&sums[j], data, s, use) < 0)
            goto done;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *entry;
    while (PyDict_Next(groups, &pos, &key, &entry)) {
        Py_ssize_t j = PyLong_AsSsize_t(PyList_GET_ITEM(entry, 1));
        PyObject *d = sums_dict(&sums[j], use), *c = d ? PyLong_FromSsize_t(counts[j]) : NULL;
        if (c == NULL) {
            Py_XDECREF(d);
            goto done;
        }
        PyList_SetItem(entry, 1, c);  /* (steal) */
        PyList_SetItem(entry, 2, d);
    }
    result = groups;
    groups = NULL;
done:
    for (Py_ssize_t j = 0; j < n; j++)
        sums_free(&sums[j]);
    PyMem_Free(sums);
    PyMem_Free(counts);
    Py_XDECREF(prev.name);
    Py_XDECREF(groups);
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
    int by_name = nargs == 9 ? PyObject_IsTrue(args[8]) : 0;
    if (by_name < 0)
        return NULL;
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
        if (use == NULL || select != Py_None || summing) {
            PyErr_SetString(PyExc_TypeError, "summing by name takes keys, a Mapping and no select");
            goto done;
        }
        PyObject *groups = sums_by_name(data, spans, count, use, mapping_type, anonymous);
        if (groups != NULL)
            result = Py_BuildValue("(NO)", groups, had_pss ? Py_True : Py_False);
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
        if (use->n > MAX_KEYS && (sums->dict = PyDict_New()) == NULL)
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
