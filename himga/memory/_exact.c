/* himga.memory._exact: the exact float32 cosines of a query with chosen rows of the vector
   index's matrix (himga.memory.vectors), in C; and the vectors scaled to length 1, and a
   query's moments.

   Two functions for the cosines: `dots`, the dot product of the query with each chosen row, and
   `best_of`, the best `k` of the chosen rows by it, with their keys. They read the rows where
   they lie (no copy of them first, as numpy's fancy indexing makes), asking for each a few rows
   ahead: the rows a search re-scores lie apart in a matrix far larger than the caches, so
   reading them one after the other would wait on memory for each.

   Two for the vectors themselves: `units`, each row scaled to length 1 (the stored rows as they
   are added, and a query, which a search reads three or four times on its path: each time
   numpy's five calls or more, before), and `moments`, a query's products with the index's kept
   moments (for the cosines' mean and deviation over every vector: VectorIndex.stats).

   A dot product adds its terms in one fixed order, without FMA contraction (_exact.h, shared with
   the shared scan's re-scoring in _sketch.c), so a row's cosine is the same bit for bit from
   either function, from that re-scoring and on every machine. The interpreter's lock is
   released while they run (the caller keeps the matrix unchanged: the vector index's rule, no
   write beside a search). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_exact.h"

#define AHEAD 8 /* rows asked for ahead of the one being read */

/* The dot products of `query` with rows `rows` (n of them; NULL: the first n, which lie one
   after the other, as the processor reads ahead by itself) of `matrix`, into `out`. */
static void dots_of(const float *matrix, const int32_t *rows, Py_ssize_t n, const float *query,
                    Py_ssize_t dimension, float *out) {
    if (rows == NULL) {
        for (Py_ssize_t i = 0; i < n; i++)
            out[i] = exact_dot(matrix + i * dimension, query, dimension);
        return;
    }
    for (Py_ssize_t i = 0; i < n && i < AHEAD; i++)
        ask_for_row(matrix + rows[i] * dimension, dimension);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + AHEAD < n) ask_for_row(matrix + rows[i + AHEAD] * dimension, dimension);
        out[i] = exact_dot(matrix + rows[i] * dimension, query, dimension);
    }
}

/* --- the arguments ------------------------------------------------------------------------ */

typedef struct {
    Py_buffer matrix, rows, query;
    Py_ssize_t dimension, stored, n;
} Chosen;

static int view_of(PyObject *object, Py_buffer *view, char format, Py_ssize_t itemsize,
                   const char *what, const char *type) {
    if (PyObject_GetBuffer(object, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
        /* numpy's says "not C-contiguous", naming no argument; any other error stands */
        if (PyErr_ExceptionMatches(PyExc_BufferError) ||
            PyErr_ExceptionMatches(PyExc_ValueError) || PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s must be a contiguous buffer of %s", what, type);
        }
        return -1;
    }
    const char *given = view->format ? view->format : "B";
    if (*given == '@' || *given == '=' || *given == '<') given++;
    /* int64 is 'l' or 'q' by the platform; both name an 8-byte integer here */
    const int same = strlen(given) == 1 && (*given == format || (format == 'q' && *given == 'l'));
    if (view->itemsize != itemsize || !same) {
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous buffer of %s", what, type);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Reads the matrix, the chosen rows (None: every row, in order) and the query into `chosen`
   (released by `release`), every row checked to be one of the matrix's first `stored` (-1: all
   of them); -1 with the error set (nothing held) when they cannot be read. */
static int open_chosen(PyObject *matrix, PyObject *rows, PyObject *query, Py_ssize_t stored,
                       Chosen *chosen) {
    chosen->rows.obj = NULL;
    chosen->rows.buf = NULL;
    if (view_of(matrix, &chosen->matrix, 'f', 4, "matrix", "float32") < 0) return -1;
    if (rows != Py_None && view_of(rows, &chosen->rows, 'i', 4, "rows", "int32") < 0) {
        chosen->rows.obj = NULL;
        chosen->rows.buf = NULL;
        goto no_rows;
    }
    if (view_of(query, &chosen->query, 'f', 4, "query", "float32") < 0) goto no_query;
    chosen->dimension = chosen->query.len / 4;
    if (chosen->dimension == 0 || chosen->matrix.len % chosen->query.len != 0) {
        PyErr_Format(PyExc_ValueError, "matrix holds %zd bytes, not whole rows of %zd floats",
                     chosen->matrix.len, chosen->dimension);
        goto refused;
    }
    const Py_ssize_t held = chosen->matrix.len / chosen->query.len;
    chosen->stored = stored < 0 || stored > held ? held : stored;
    chosen->n = chosen->rows.obj != NULL ? chosen->rows.len / 4 : chosen->stored;
    const int32_t *row = chosen->rows.buf;
    for (Py_ssize_t i = 0; row != NULL && i < chosen->n; i++) {
        if (row[i] < 0 || row[i] >= chosen->stored) {
            PyErr_Format(PyExc_ValueError, "rows[%zd] is %d, not one of the %zd rows", i,
                         (int)row[i], chosen->stored);
            goto refused;
        }
    }
    return 0;
refused:
    PyBuffer_Release(&chosen->query);
no_query:
    if (chosen->rows.obj != NULL) PyBuffer_Release(&chosen->rows);
no_rows:
    PyBuffer_Release(&chosen->matrix);
    return -1;
}

static void release(Chosen *chosen) {
    PyBuffer_Release(&chosen->query);
    if (chosen->rows.obj != NULL) PyBuffer_Release(&chosen->rows);
    PyBuffer_Release(&chosen->matrix);
}

/* --- dots ---------------------------------------------------------------------------------- */

PyDoc_STRVAR(dots_doc,
"dots(matrix, rows, query) -> bytearray\n\n"
"The dot product of `query` (float32, d of them) with each of `rows` (int32 row numbers; None:\n"
"every row) of `matrix` (float32, C order, d a row), in the rows' order: float32, native order.");

static PyObject *dots(PyObject *module, PyObject *args) {
    PyObject *matrix, *rows, *query;
    if (!PyArg_ParseTuple(args, "OOO:dots", &matrix, &rows, &query)) return NULL;
    Chosen chosen;
    if (open_chosen(matrix, rows, query, -1, &chosen) < 0) return NULL;
    PyObject *result = PyByteArray_FromStringAndSize(NULL, chosen.n * 4);
    if (result != NULL) {
        float *out = (float *)PyByteArray_AS_STRING(result);
        Py_BEGIN_ALLOW_THREADS
        dots_of(chosen.matrix.buf, chosen.rows.buf, chosen.n, chosen.query.buf, chosen.dimension,
                out);
        Py_END_ALLOW_THREADS
    }
    release(&chosen);
    return result;
}

/* --- best_of ------------------------------------------------------------------------------- */

PyDoc_STRVAR(best_of_doc,
"best_of(matrix, keys, rows, query, k) -> tuple[bytearray, bytearray]\n\n"
"The best `k` of `rows` (int32 numbers of rows of `matrix`, each below len(keys) too) by\n"
"their dot product with `query` (as dots gives it), best first, ties to the lower key: their\n"
"keys (`keys`: int64, one a row of the matrix) as int64 and their dot products as float32,\n"
"native order; fewer when fewer rows are given. A row given twice counts once.");

static PyObject *best_of(PyObject *module, PyObject *args) {
    PyObject *matrix, *keys_arg, *rows, *query;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "OOOOn:best_of", &matrix, &keys_arg, &rows, &query, &k))
        return NULL;
    if (k < 0) {
        PyErr_SetString(PyExc_ValueError, "k must not be negative");
        return NULL;
    }
    Py_buffer keys;
    if (view_of(keys_arg, &keys, 'q', 8, "keys", "int64") < 0) return NULL;
    Chosen chosen;
    if (rows == Py_None) {
        PyErr_SetString(PyExc_TypeError, "rows must be a contiguous buffer of int32");
        PyBuffer_Release(&keys);
        return NULL;
    }
    if (open_chosen(matrix, rows, query, keys.len / 8, &chosen) < 0) {
        PyBuffer_Release(&keys);
        return NULL;
    }
    PyObject *result = NULL;
    Scored *scored = PyMem_RawMalloc((size_t)(chosen.n ? chosen.n : 1) * sizeof(Scored));
    float *scores = PyMem_RawMalloc((size_t)(chosen.n ? chosen.n : 1) * sizeof(float));
    if (scored == NULL || scores == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t found = 0;
    Py_BEGIN_ALLOW_THREADS
    dots_of(chosen.matrix.buf, chosen.rows.buf, chosen.n, chosen.query.buf, chosen.dimension,
            scores);
    const int32_t *row = chosen.rows.buf;
    const int64_t *key = keys.buf;
    for (Py_ssize_t i = 0; i < chosen.n; i++) {
        Scored here = {scores[i], key[row[i]]};
        scored[i] = here;
    }
    found = best_scored_first(scored, chosen.n, k); /* a row given twice: one key twice */
    Py_END_ALLOW_THREADS
    result = scored_answer(scored, found);
done:
    PyMem_RawFree(scored);
    PyMem_RawFree(scores);
    release(&chosen);
    PyBuffer_Release(&keys);
    return result;
}

/* --- the query: its unit vector and its moments --------------------------------------------- */

#define MOMENT_LANES 8 /* running sums of the double loops here (one order, any machine) */

/* The sum of a float32 row's squares in double, in MOMENT_LANES running sums (coordinate j into
   sum j mod MOMENT_LANES, then the sums in a fixed tree, then the coordinates past the last
   lanes). A float32's square cannot overflow a double, nor their sum. */
static double squares_of(const float *row, Py_ssize_t d) {
    double lane[MOMENT_LANES] = {0};
    Py_ssize_t j = 0;
    for (; j + MOMENT_LANES <= d; j += MOMENT_LANES)
        for (int l = 0; l < MOMENT_LANES; l++) lane[l] += (double)row[j + l] * (double)row[j + l];
    for (int width = MOMENT_LANES / 2; width > 0; width /= 2)
        for (int l = 0; l < width; l++) lane[l] += lane[l + width];
    double sum = lane[0];
    for (; j < d; j++) sum += (double)row[j] * (double)row[j];
    return sum;
}

PyDoc_STRVAR(units_doc,
"units(rows, dimension) -> bytearray | None\n\n"
"Each of `rows` (float32, C order, `dimension` a row) scaled to length 1, as float32 in native\n"
"order: a row's squares added in double, in one fixed order, and each coordinate times the\n"
"inverse of their root in double. None when a row has no direction (every coordinate 0) or\n"
"holds a NaN or an infinity: the caller says which.");

static PyObject *units(PyObject *module, PyObject *args) {
    PyObject *rows_arg;
    Py_ssize_t d;
    if (!PyArg_ParseTuple(args, "On:units", &rows_arg, &d)) return NULL;
    if (d <= 0) {
        PyErr_SetString(PyExc_ValueError, "dimension must be positive");
        return NULL;
    }
    Py_buffer rows;
    if (view_of(rows_arg, &rows, 'f', 4, "rows", "float32") < 0) return NULL;
    PyObject *result = NULL;
    if (rows.len % (d * 4) != 0) {
        PyErr_Format(PyExc_ValueError, "rows holds %zd floats, not whole rows of %zd", rows.len / 4,
                     d);
    } else if ((result = PyByteArray_FromStringAndSize(NULL, rows.len)) != NULL) {
        const float *row = rows.buf;
        float *out = (float *)PyByteArray_AS_STRING(result);
        const Py_ssize_t n = rows.len / (d * 4);
        int refused = 0;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++, row += d, out += d) {
            const double squares = squares_of(row, d);
            refused = !(squares > 0.0) || !isfinite(squares); /* NaN compares false: refused */
            if (refused) break;
            const double inverse = 1.0 / sqrt(squares); /* a product a coordinate, no division */
            for (Py_ssize_t j = 0; j < d; j++) out[j] = (float)((double)row[j] * inverse);
        }
        Py_END_ALLOW_THREADS
        if (refused) {
            Py_DECREF(result);
            result = Py_None;
            Py_INCREF(result);
        }
    }
    PyBuffer_Release(&rows);
    return result;
}

/* The sum of row[j] * q[j], in MOMENT_LANES running sums (coordinate j into sum j mod
   MOMENT_LANES, then the sums in a fixed tree, then the coordinates past the last lanes). */
static double moment_dot(const double *row, const double *q, Py_ssize_t d) {
    double lane[MOMENT_LANES] = {0};
    Py_ssize_t j = 0;
    for (; j + MOMENT_LANES <= d; j += MOMENT_LANES)
        for (int l = 0; l < MOMENT_LANES; l++) lane[l] += row[j + l] * q[j + l];
    for (int width = MOMENT_LANES / 2; width > 0; width /= 2)
        for (int l = 0; l < width; l++) lane[l] += lane[l + width];
    double sum = lane[0];
    for (; j < d; j++) sum += row[j] * q[j];
    return sum;
}

PyDoc_STRVAR(moments_doc,
"moments(total, outer, query) -> tuple[float, float]\n\n"
"`total . query` and `query . outer . query` (`total`: float64, d of them; `outer`: float64, d\n"
"by d, C order; `query`: float32, d), each added in one fixed order in double.");

static PyObject *moments(PyObject *module, PyObject *args) {
    PyObject *total_arg, *outer_arg, *query_arg;
    if (!PyArg_ParseTuple(args, "OOO:moments", &total_arg, &outer_arg, &query_arg)) return NULL;
    Py_buffer total, outer, query;
    PyObject *result = NULL;
    if (view_of(total_arg, &total, 'd', 8, "total", "float64") < 0) return NULL;
    if (view_of(outer_arg, &outer, 'd', 8, "outer", "float64") < 0) goto no_outer;
    if (view_of(query_arg, &query, 'f', 4, "query", "float32") < 0) goto no_query;
    const Py_ssize_t d = query.len / 4;
    double *q = PyMem_RawMalloc((size_t)(d ? d : 1) * sizeof(double));
    if (total.len != d * 8 || outer.len != d * d * 8) {
        PyErr_Format(PyExc_ValueError,
                     "total and outer must hold %zd and %zd floats, not %zd and %zd", d, d * d,
                     total.len / 8, outer.len / 8);
    } else if (q == NULL) {
        PyErr_NoMemory();
    } else {
        double along, across = 0.0;
        Py_BEGIN_ALLOW_THREADS
        const float *given = query.buf;
        const double *rows = outer.buf;
        for (Py_ssize_t j = 0; j < d; j++) q[j] = given[j];
        along = moment_dot(total.buf, q, d);
        for (Py_ssize_t i = 0; i < d; i++) across += moment_dot(rows + i * d, q, d) * q[i];
        Py_END_ALLOW_THREADS
        result = Py_BuildValue("(dd)", along, across);
    }
    PyMem_RawFree(q);
    PyBuffer_Release(&query);
no_query:
    PyBuffer_Release(&outer);
no_outer:
    PyBuffer_Release(&total);
    return result;
}

static PyMethodDef methods[] = {
    {"dots", dots, METH_VARARGS, dots_doc},
    {"best_of", best_of, METH_VARARGS, best_of_doc},
    {"units", units, METH_VARARGS, units_doc},
    {"moments", moments, METH_VARARGS, moments_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "himga.memory._exact",
    "The exact cosines of chosen rows of the vector index, in C (_exact.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__exact(void) { return PyModule_Create(&module); }
