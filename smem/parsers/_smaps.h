/* What the parts of the C smaps parser (smem/parsers/_smaps*.c, one extension) share: the
 * spans of a smaps text, the counters kept (Keys), their sums (Sums), and the functions of
 * each part (_smaps_text.c: headers, values, kept counters and names; _smaps_sums.c: sums;
 * _smaps_names.c: sums by name; _smaps.c: the module).
 */
#ifndef SMEM_SMAPS_H
#define SMEM_SMAPS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE  /* memmem */
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#pragma GCC visibility push(hidden)  /* (only the module's PyInit__smaps is exported) */

/* bytes.split()/rstrip() whitespace (Py_ISSPACE on bytes) */
static inline int is_ws(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

static inline int is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

typedef struct {
    Py_ssize_t start, eol, hi;       /* header line data[start:eol]; counters data[eol:hi] */
    Py_ssize_t name_lo, name_hi;     /* the name, data[name_lo:name_hi] (empty: anonymous) */
} Span;

#define MAX_KEYS 64

typedef struct {
    PyObject *keys;       /* tuple of str */
    Py_ssize_t n;
    char **needles;       /* "\nKEY:" */
    Py_ssize_t *lens;
    unsigned long long by_first[256];  /* at most MAX_KEYS keys: those starting with each byte, a bit each */
} Keys;

/* The kept counters' sums over mappings, in C integers while they fit (a key no mapping has
 * stays absent; keys in the order first found, as the Python sum inserts them). */
typedef struct {
    long long *sum;            /* each of n keys (one block, sized by sums_init) */
    PyObject **big;            /* the sum as a Python int, once it no longer fits */
    char *present;
    Py_ssize_t *order, n_present, n;
    PyObject *dict;            /* more keys than MAX_KEYS: a dict summed in Python ints */
} Sums;

/* The name of the mapping at s (a new reference): decoded once for a run of mappings of one
 * name (a file's come one after another), interned; the anonymous name where it is empty. */
typedef struct {
    PyObject *name;
    Py_ssize_t lo, len;
} PrevName;

int header_at(const char *p, const char *end);
int check_header(const char *data, Span *s);
PyObject *value_of_text(const char *v, const char *ve);
PyObject *value_at(const char *data, Py_ssize_t hi, const char *hit, Py_ssize_t nlen);
PyObject *find_value(const char *data, Py_ssize_t lo, Py_ssize_t hi, const char *needle, Py_ssize_t nlen);
void keys_free(Keys *k);
int keys_init(Keys *k, PyObject *keys);
PyObject *kept(const char *data, const Span *s, const Keys *k);
PyObject *name_at(const char *data, const Span *s, PyObject *anonymous, PrevName *prev);
int sums_init(Sums *t, const Keys *k);
int sums_add(Sums *t, const char *data, const Span *s, const Keys *k);
PyObject *sums_dict(Sums *t, const Keys *k);
void sums_free(Sums *t);
Sums *sums_new(const Keys *k);
void sums_delete(Sums *t);
int sums_merge(Sums *into, const Sums *from, const Keys *k);
PyObject *sums_value(const Sums *t, const Keys *k, Py_ssize_t i);
PyObject *sums_by_name(const char *data, const Span *spans, Py_ssize_t count, const Keys *use, PyObject *fields, PyObject *anonymous);

/* (inline: the hot loop of every pass, called from each part) */
/* Where the value of a "KEY:" line found at hit (the needle "\nKEY:", nlen bytes, ends before hi)
 * is, as Counters._find reads it: 0 if the line does not end in kB (no counter); 1 with *n set
 * for the usual "   1234 kB"; 2 with the text int() is to judge in [*v, *ve). */
static inline int scan_value(const char *data, Py_ssize_t hi, const char *hit, Py_ssize_t nlen, long long *n,
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

/* Counters(...).kept(keys).  Where the mapping's text holds "\nKEY:" first: one walk over its
 * lines, in order, finds for every key the first line that starts with "KEY:" (and ends before
 * hi), which is where data.find(b"\nKEY:", lo, hi) finds it (lo is at a newline, so every
 * newline in data[lo:hi] starts a line); it stops once every key is found. */
static inline void find_hits(const char *data, const Span *s, const Keys *k, const char **hits)
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

#pragma GCC visibility pop

#endif
