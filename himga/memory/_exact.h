/* himga/memory/_exact.h: the vector index's exact cosines, shared by the C that computes them
   (himga.memory._exact, and the shared scan's re-scoring in himga.memory._sketch), so that a
   cosine, and the best of them, are the same from either: the dot product, and the order and
   answer of the best `k` rows by it.

   The terms are added in one fixed order (16 running sums, coordinate j into sum j mod 16,
   then the sums in a fixed tree, then the coordinates past the last 16), and both modules are
   built without FMA contraction (setup.py), so a row's cosine is also the same on every
   machine. */

#ifndef HIMGA_EXACT_H
#define HIMGA_EXACT_H

#include <Python.h>

#include <stdint.h>
#include <stdlib.h>

#define DOT_LANES 16

static inline float exact_dot(const float *row, const float *query, Py_ssize_t dimension) {
    float lane[DOT_LANES] = {0};
    Py_ssize_t j = 0;
    for (; j + DOT_LANES <= dimension; j += DOT_LANES)
        for (int l = 0; l < DOT_LANES; l++) lane[l] += row[j + l] * query[j + l];
    for (int width = DOT_LANES / 2; width > 0; width /= 2)
        for (int l = 0; l < width; l++) lane[l] += lane[l + width];
    float sum = lane[0];
    for (; j < dimension; j++) sum += row[j] * query[j];
    return sum;
}

/* Asks the processor for a row's cache lines, to be read soon. */
static inline void ask_for_row(const float *row, Py_ssize_t dimension) {
#if defined(__GNUC__) || defined(__clang__)
    const char *at = (const char *)row, *end = (const char *)(row + dimension);
    for (; at < end; at += 64) __builtin_prefetch(at);
#else
    (void)row;
    (void)dimension;
#endif
}

/* A row's key and its cosine. */
typedef struct {
    float score;
    int64_t key;
} Scored;

/* a before b: the greater score, then the lower key */
static inline int scored_first(const void *a, const void *b) {
    const Scored *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return (x->key > y->key) - (x->key < y->key);
}

/* Sorts the `n` rows of `scored` best first and keeps the best `k`, a key given twice once (side
   by side once sorted): returns how many lead `scored`. No interpreter's lock needed. */
static inline Py_ssize_t best_scored_first(Scored *scored, Py_ssize_t n, Py_ssize_t k) {
    qsort(scored, (size_t)n, sizeof(Scored), scored_first);
    Py_ssize_t found = 0;
    for (Py_ssize_t i = 0; i < n && found < k; i++)
        if (found == 0 || scored[found - 1].key != scored[i].key) scored[found++] = scored[i];
    return found;
}

/* The first `found` of `scored` as best_of answers: (keys as int64, cosines as float32), each a
   bytearray in native order; NULL with the error set. */
static inline PyObject *scored_answer(const Scored *scored, Py_ssize_t found) {
    PyObject *result = NULL;
    PyObject *keys = PyByteArray_FromStringAndSize(NULL, found * 8);
    PyObject *scores = PyByteArray_FromStringAndSize(NULL, found * 4);
    if (keys != NULL && scores != NULL) {
        int64_t *out_keys = (int64_t *)PyByteArray_AS_STRING(keys);
        float *out_scores = (float *)PyByteArray_AS_STRING(scores);
        for (Py_ssize_t i = 0; i < found; i++) {
            out_keys[i] = scored[i].key;
            out_scores[i] = scored[i].score;
        }
        result = PyTuple_Pack(2, keys, scores);
    }
    Py_XDECREF(keys);
    Py_XDECREF(scores);
    return result;
}

#endif
