/* himga/memory/_dot.h: the dot product of the vector index's exact cosines, shared by the C
   that computes them (himga.memory._exact, and the shared scan's re-scoring in
   himga.memory._sketch), so that a cosine is the same bit for bit from either.

   The terms are added in one fixed order (16 running sums, coordinate j into sum j mod 16,
   then the sums in a fixed tree, then the coordinates past the last 16), and both modules are
   built without FMA contraction (setup.py), so a row's cosine is also the same on every
   machine. */

#ifndef HIMGA_DOT_H
#define HIMGA_DOT_H

#include <Python.h>

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

#endif
