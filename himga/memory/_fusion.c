/* himga.memory._fusion: the scores of himga.memory.fusion's method, in C.

   It computes what fusion.py's `_scores` defines (each candidate's keyword score over the
   scale, plus the dense weight times its z, plus the dense and neighbour weights times the best
   z of its neighbours in the session) in the same order of floating-point operations, so the
   scores are bit for bit those of the Python (tests/memory/test_fusion_core.py holds the two to
   that). The Python makes some forty calls into numpy, each with its own small arrays, for the
   few hundred candidates of a search; after the query's embedding has emptied the caches a
   hybrid Retrieve at 100k messages spent 0.36 ms in them, and 0.095 ms in the fusion with this
   (p50, one-off timings; benchmarks/README.md, "The hybrid Retrieve"). `best` then orders the
   best of them as fusion._best asks (0.047 ms less after the vector than numpy's lexsort and
   a list made of it, a one-off A/B in one process, 6 runs of 100 questions at 100k). The
   candidates are few, so the interpreter's lock is kept. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

/* A key and where it was given: sorting by both and keeping each key's first leaves the keys
   each once, ascending, with their first place, as numpy's unique(return_index=True) does. */
typedef struct {
    int64_t key;
    Py_ssize_t at;
} Entry;

static int by_key_then_place(const void *a, const void *b) {
    const Entry *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

/* Sorts `entries` and keeps each key's first; returns how many are kept. */
static Py_ssize_t firsts(Entry *entries, Py_ssize_t n) {
    qsort(entries, (size_t)n, sizeof(Entry), by_key_then_place);
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (kept == 0 || entries[kept - 1].key != entries[i].key) entries[kept++] = entries[i];
    return kept;
}

/* The place of `key` among `n` ascending keys, or -1. */
static Py_ssize_t place_of(const int64_t *keys, Py_ssize_t n, int64_t key) {
    Py_ssize_t low = 0, high = n;
    while (low < high) {
        Py_ssize_t middle = low + (high - low) / 2;
        if (keys[middle] < key)
            low = middle + 1;
        else
            high = middle;
    }
    return low < n && keys[low] == key ? low : -1;
}

/* A contiguous buffer of `object` whose items are `size` bytes of one of `formats`. */
static int view_of(PyObject *object, Py_buffer *view, const char *formats, Py_ssize_t size,
                   const char *what, const char *type) {
    if (PyObject_GetBuffer(object, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return -1;
    const char *format = view->format ? view->format : "B";
    if (*format == '@' || *format == '=' || *format == '<') format++;
    if (view->itemsize != size || strlen(format) != 1 || !strchr(formats, *format)) {
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous buffer of %s", what, type);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

enum { KEYWORD_KEYS, KEYWORD_SCORES, DENSE_KEYS, COSINES, SESSIONS, BEFORE, AFTER, VIEWS };

static const struct {
    const char *formats, *name, *type;
    Py_ssize_t size;
} kinds[VIEWS] = {
    {"lq", "keyword_keys", "int64", 8}, {"d", "keyword_scores", "float64", 8},
    {"lq", "dense_keys", "int64", 8},   {"d", "cosines", "float64", 8},
    {"i", "sessions", "int32", 4},      {"i", "before", "int32", 4},
    {"i", "after", "int32", 4},
};

PyDoc_STRVAR(scores_doc,
"scores(keyword_keys, keyword_scores, dense_keys, cosines, mean, deviation, sessions, before,\n"
"       after, dense_weight, neighbour_weight, coverage, full_match) -> (bytes, bytearray)\n\n"
"The candidates (int64, ascending: the keys either side gave) and their scores (float64) by\n"
"fusion's method: what fusion._scores computes of the same arguments, to the bit, with the\n"
"neighbours of a candidate read from `sessions`, `before` and `after` (int32 by turn number:\n"
"-1 for no turn, no neighbour) as Windows.holds and beside tell. Keys given twice count at their\n"
"first place; nan cosines are left out.");

static PyObject *scores(PyObject *module, PyObject *args) {
    PyObject *arguments[VIEWS];
    double mean, deviation, weight, neighbour_weight, coverage, full_match;
    if (!PyArg_ParseTuple(args, "OOOOddOOOdddd:scores", &arguments[KEYWORD_KEYS],
                          &arguments[KEYWORD_SCORES], &arguments[DENSE_KEYS], &arguments[COSINES],
                          &mean, &deviation, &arguments[SESSIONS], &arguments[BEFORE],
                          &arguments[AFTER], &weight, &neighbour_weight, &coverage, &full_match))
        return NULL;
    Py_buffer views[VIEWS];
    int made = 0;
    PyObject *result = NULL;
    Entry *keyword = NULL, *dense = NULL;
    int64_t *candidates = NULL;
    double *z = NULL;
    for (; made < VIEWS; made++)
        if (view_of(arguments[made], &views[made], kinds[made].formats, kinds[made].size,
                    kinds[made].name, kinds[made].type) < 0)
            goto done;
    Py_ssize_t keyword_count = views[KEYWORD_KEYS].len / 8, dense_count = views[DENSE_KEYS].len / 8;
    Py_ssize_t end = views[SESSIONS].len / 4;
    if (views[KEYWORD_SCORES].len / 8 != keyword_count || views[COSINES].len / 8 != dense_count) {
        PyErr_SetString(PyExc_ValueError, "each key must have one score");
        goto done;
    }
    if (views[BEFORE].len / 4 != end || views[AFTER].len / 4 != end) {
        PyErr_SetString(PyExc_ValueError, "sessions, before and after must cover the same turns");
        goto done;
    }
    const int64_t *keyword_keys = views[KEYWORD_KEYS].buf, *dense_keys = views[DENSE_KEYS].buf;
    const double *keyword_scores = views[KEYWORD_SCORES].buf, *cosines = views[COSINES].buf;
    const int32_t *sessions = views[SESSIONS].buf, *before = views[BEFORE].buf,
                  *after = views[AFTER].buf;

    keyword = PyMem_Malloc(sizeof(Entry) * (size_t)(keyword_count ? keyword_count : 1));
    dense = PyMem_Malloc(sizeof(Entry) * (size_t)(dense_count ? dense_count : 1));
    if (keyword == NULL || dense == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < keyword_count; i++) keyword[i] = (Entry){keyword_keys[i], i};
    Py_ssize_t keywords = firsts(keyword, keyword_count);
    Py_ssize_t given = 0;
    for (Py_ssize_t i = 0; i < dense_count; i++)
        if (!isnan(cosines[i])) dense[given++] = (Entry){dense_keys[i], i};
    Py_ssize_t denses = firsts(dense, given);

    /* the candidates: both sides' keys, each once, ascending */
    candidates = PyMem_Malloc(sizeof(int64_t) * (size_t)(keywords + denses + 1));
    z = PyMem_Malloc(sizeof(double) * (size_t)(denses + 1));
    if (candidates == NULL || z == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0, j = 0; i < keywords || j < denses;) {
        if (j == denses || (i < keywords && keyword[i].key < dense[j].key))
            candidates[count++] = keyword[i++].key;
        else if (i == keywords || dense[j].key < keyword[i].key)
            candidates[count++] = dense[j++].key;
        else {
            candidates[count++] = keyword[i++].key;
            j++;
        }
    }
    PyObject *scored = PyByteArray_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(double));
    if (scored == NULL) goto done;
    double *score = (double *)PyByteArray_AS_STRING(scored);
    memset(score, 0, (size_t)count * sizeof(double));

    if (keywords) {
        /* the greatest of the first places' scores (nan if any is), then Python's max() */
        double top = keyword_scores[keyword[0].at];
        for (Py_ssize_t i = 1; i < keywords && !isnan(top); i++) {
            double s = keyword_scores[keyword[i].at];
            if (isnan(s) || s > top) top = s;
        }
        double least = coverage * full_match;
        double best = least > top ? least : top;
        if (best > 0)
            for (Py_ssize_t i = 0; i < keywords; i++)
                score[place_of(candidates, count, keyword[i].key)] +=
                    keyword_scores[keyword[i].at] / best;
    }
    if (denses && deviation > 0) {
        int64_t *near = PyMem_Malloc(sizeof(int64_t) * (size_t)denses);
        if (near == NULL) {
            Py_DECREF(scored);
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t j = 0; j < denses; j++) {
            near[j] = dense[j].key;
            z[j] = (cosines[dense[j].at] - mean) / deviation;
            score[place_of(candidates, count, near[j])] += weight * z[j];
        }
        if (neighbour_weight > 0) {
            double beside_weight = weight * neighbour_weight;
            for (Py_ssize_t i = 0; i < count; i++) {
                int64_t turn = candidates[i];
                if (turn < 0 || turn >= end || sessions[turn] == -1) continue;
                double best = -INFINITY;
                int32_t sides[2] = {before[turn], after[turn]};
                for (int side = 0; side < 2; side++) {
                    if (sides[side] < 0) continue;
                    Py_ssize_t j = place_of(near, denses, sides[side]);
                    if (j >= 0 && (isnan(z[j]) || z[j] > best)) best = z[j];  /* np.maximum */
                    if (isnan(best)) break;
                }
                if (isfinite(best)) score[i] += beside_weight * best;
            }
        }
        PyMem_Free(near);
    }
    PyObject *keys = PyBytes_FromStringAndSize((const char *)candidates,
                                               count * (Py_ssize_t)sizeof(int64_t));
    if (keys == NULL) {
        Py_DECREF(scored);
        goto done;
    }
    result = Py_BuildValue("(NN)", keys, scored);
done:
    PyMem_Free(z);
    PyMem_Free(candidates);
    PyMem_Free(dense);
    PyMem_Free(keyword);
    while (made-- > 0) PyBuffer_Release(&views[made]);
    return result;
}

/* --- the best candidates ----------------------------------------------------------------- */

/* Whether (score a, key a) ranks before (score b, key b): the greater score first, nan after
   every number, ties to the smaller key (as numpy's lexsort((keys, -scores)) orders them). */
static inline int ahead(double a, int64_t key_a, double b, int64_t key_b) {
    if (isnan(a) || isnan(b)) return isnan(a) != isnan(b) ? !isnan(a) : key_a < key_b;
    if (a != b) return a > b;
    return key_a < key_b;
}

typedef struct {
    double score;
    int64_t key;
} Ranked;

static int ranked_order(const void *a, const void *b) {
    const Ranked *x = a, *y = b;
    return ahead(x->score, x->key, y->score, y->key) ? -1 : ahead(y->score, y->key, x->score, x->key);
}

#define FEW 64 /* up to this many asked: kept in order as they come; more: every one sorted */

PyDoc_STRVAR(best_doc,
"best(keys, scores, limit) -> list[tuple[int, float]]\n\n"
"The best `limit` of `keys` (int64) by their `scores` (float64, as many), best first: the\n"
"greater score first, nan after every number, ties to the smaller key.");

/* fusion._best's ordering in one call (rather than numpy's lexsort over every candidate and a
   list made of the best): it ends every hybrid search, after the query's embedding has emptied
   the caches. */
static PyObject *best(PyObject *module, PyObject *args) {
    PyObject *keys_arg, *scores_arg;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "OOn:best", &keys_arg, &scores_arg, &limit)) return NULL;
    Py_buffer keys_view, scores_view;
    if (view_of(keys_arg, &keys_view, "lq", 8, "keys", "int64") < 0) return NULL;
    if (view_of(scores_arg, &scores_view, "d", 8, "scores", "float64") < 0) {
        PyBuffer_Release(&keys_view);
        return NULL;
    }
    PyObject *result = NULL;
    Ranked *ranked = NULL;
    const Py_ssize_t n = keys_view.len / 8;
    if (scores_view.len / 8 != n) {
        PyErr_Format(PyExc_ValueError, "scores has %zd values for %zd keys", scores_view.len / 8,
                     n);
        goto done;
    }
    if (limit < 0) {
        PyErr_SetString(PyExc_ValueError, "limit must not be negative");
        goto done;
    }
    const int64_t *key = keys_view.buf;
    const double *score = scores_view.buf;
    Py_ssize_t kept = 0;
    if (limit > n) limit = n;
    ranked = PyMem_Malloc((size_t)(limit <= FEW ? (limit > 0 ? limit : 1) : n) * sizeof(Ranked));
    if (ranked == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (limit <= FEW) {
        for (Py_ssize_t i = 0; i < n && limit > 0; i++) {
            if (kept == limit &&
                !ahead(score[i], key[i], ranked[kept - 1].score, ranked[kept - 1].key))
                continue;
            Py_ssize_t at = kept < limit ? kept++ : kept - 1;
            for (; at > 0 && ahead(score[i], key[i], ranked[at - 1].score, ranked[at - 1].key);
                 at--)
                ranked[at] = ranked[at - 1];
            ranked[at].score = score[i];
            ranked[at].key = key[i];
        }
    } else {
        for (Py_ssize_t i = 0; i < n; i++) {
            ranked[i].score = score[i];
            ranked[i].key = key[i];
        }
        qsort(ranked, (size_t)n, sizeof(Ranked), ranked_order);
        kept = limit;
    }
    result = PyList_New(kept);
    for (Py_ssize_t i = 0; result != NULL && i < kept; i++) {
        PyObject *pair = Py_BuildValue("(Ld)", (long long)ranked[i].key, ranked[i].score);
        if (pair == NULL) Py_CLEAR(result);
        else PyList_SET_ITEM(result, i, pair);
    }
done:
    PyMem_Free(ranked);
    PyBuffer_Release(&scores_view);
    PyBuffer_Release(&keys_view);
    return result;
}

static PyMethodDef methods[] = {
    {"best", best, METH_VARARGS, best_doc},
    {"scores", scores, METH_VARARGS, scores_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "himga.memory._fusion",
    "The scores of himga.memory.fusion's method, in C (_fusion.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__fusion(void) { return PyModule_Create(&module); }
