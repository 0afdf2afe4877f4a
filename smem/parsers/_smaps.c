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
#include "_smaps.h"

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
        if ((sums = sums_new(use)) == NULL)
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
    sums_delete(sums);
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
