/* himga.memory._sketch: the scan of himga.memory.sketch, in C.

   One function, best_rows: given n sketches of r 4-bit coordinates each (unsigned, 0 to 15, two
   a byte: in each BLOCK of 64 coordinates, byte j holds coordinate j in its low half and
   coordinate 32 + j in its high half; one C-ordered block of r / 2 bytes a row) and a query of
   r int8 weights, the `count` rows of greatest dot product, best first, ties to the lower row
   (r a multiple of 64). Integer arithmetic only (15 x 128 x MOST_RANK fits int32 with room),
   so the answer is the same on every machine and in both loops, the portable one and AVX2's
   (where the processor has it: 64 coordinates a step). A bounded heap keeps the best rows
   seen; a row enters only when it beats the worst kept, which after the first few thousand
   rows is rare, so the scan is the dot products. The rows may be shared out to a few threads
   (a scan of a large index is bound by memory, which one core does not exhaust here). The
   interpreter's lock is released while it runs (the caller keeps the sketches unchanged: the
   vector index's rule, no write beside a search). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MOST_RANK 65536
#define BLOCK 64
#define HALF (BLOCK / 2)
#define MOST_THREADS 16

#if !defined(_WIN32)
#define HAVE_THREADS 1
#include <pthread.h>
#endif

static int has_avx2 = 0; /* set once, when the module loads */

typedef struct {
    int32_t score;
    int32_t row;
} Kept;

/* a ranks below b: a lower score, or the same score and a later row */
static inline int worse(const Kept *a, const Kept *b) {
    return a->score < b->score || (a->score == b->score && a->row > b->row);
}

/* min-heap by rank: the worst kept row at the root */
static void sift_down(Kept *heap, Py_ssize_t size, Py_ssize_t at) {
    for (;;) {
        Py_ssize_t child = 2 * at + 1, least = at;
        if (child < size && worse(&heap[child], &heap[least])) least = child;
        if (child + 1 < size && worse(&heap[child + 1], &heap[least])) least = child + 1;
        if (least == at) return;
        Kept swap = heap[at];
        heap[at] = heap[least];
        heap[least] = swap;
        at = least;
    }
}

static void sift_up(Kept *heap, Py_ssize_t at) {
    while (at > 0) {
        Py_ssize_t parent = (at - 1) / 2;
        if (!worse(&heap[at], &heap[parent])) return;
        Kept swap = heap[at];
        heap[at] = heap[parent];
        heap[parent] = swap;
        at = parent;
    }
}

static int best_first(const void *a, const void *b) {
    const Kept *x = a, *y = b;
    if (worse(x, y)) return 1;
    if (worse(y, x)) return -1;
    return 0;
}

/* The dot product of a row and the query, in plain C (any processor). */
static inline int32_t dot(const uint8_t *row, const int8_t *query, Py_ssize_t rank) {
    int32_t sum = 0;
    for (Py_ssize_t at = 0; at < rank; at += BLOCK) {
        const uint8_t *bytes = row + at / 2;
        const int8_t *weights = query + at;
        for (int j = 0; j < HALF; j++) /* the low half, then the high half */
            sum += (bytes[j] & 15) * (int32_t)weights[j] +
                   (bytes[j] >> 4) * (int32_t)weights[HALF + j];
    }
    return sum;
}

/* The bounded heap's step for one row's score. */
static inline void keep(Kept *heap, Py_ssize_t *kept, Py_ssize_t count, int32_t score,
                        Py_ssize_t row) {
    Kept here = {score, (int32_t)row};
    if (*kept < count) {
        heap[*kept] = here;
        sift_up(heap, (*kept)++);
    } else if (score > heap[0].score) { /* equal: the later row ranks below */
        heap[0] = here;
        sift_down(heap, *kept, 0);
    }
}

/* One thread's share of a scan: rows [first, first + rows), its own heap of `count`. */
typedef struct {
    const uint8_t *sketches;
    const int8_t *query;
    Py_ssize_t first, rows, rank, count, kept;
    Kept *heap;
    int avx2;
} Part;

static void scan_plain(Part *p) {
    const Py_ssize_t bytes = p->rank / 2;
    const uint8_t *start = p->sketches + p->first * bytes;
    if (p->count == 0) return;
    for (Py_ssize_t i = 0; i < p->rows; i++)
        keep(p->heap, &p->kept, p->count, dot(start + i * bytes, p->query, p->rank), i);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_AVX2_SCAN 1
#include <immintrin.h>

/* AVX2's loop reads a block's 32 bytes at once and splits them into their low halves and their
   high halves (a mask, a shift), which line up with the block's first and last 32 weights; it
   multiplies those unsigned bytes by the signed weights and sums them in pairs into 16 bits
   (at most 2 x 15 x 128 a pair, so never saturated), then into 32. (A VNNI loop, four products
   summed into 32 bits an instruction, was measured too: no faster, the scan being bound by
   memory; the README has the figures.) */
__attribute__((target("avx2"))) static void scan_avx2(Part *p) {
    const Py_ssize_t rank = p->rank, bytes = rank / 2;
    const uint8_t *start = p->sketches + p->first * bytes;
    const __m256i low = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    if (p->count == 0) return;
    for (Py_ssize_t i = 0; i < p->rows; i++) {
        const uint8_t *row = start + i * bytes;
        __m256i sum = _mm256_setzero_si256();
        for (Py_ssize_t at = 0; at < rank; at += BLOCK) {
            __m256i x = _mm256_loadu_si256((const __m256i *)(row + at / 2));
            __m256i pairs = _mm256_add_epi16(
                _mm256_maddubs_epi16(_mm256_and_si256(x, low),
                                     _mm256_loadu_si256((const __m256i *)(p->query + at))),
                _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(x, 4), low),
                                     _mm256_loadu_si256((const __m256i *)(p->query + at + HALF))));
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(pairs, ones));
        }
        __m128i half = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
        half = _mm_add_epi32(half, _mm_shuffle_epi32(half, _MM_SHUFFLE(1, 0, 3, 2)));
        half = _mm_add_epi32(half, _mm_shuffle_epi32(half, _MM_SHUFFLE(2, 3, 0, 1)));
        keep(p->heap, &p->kept, p->count, _mm_cvtsi128_si32(half), i);
    }
}
#endif

static void *scan_part(void *arg) {
    Part *p = arg;
#ifdef HAVE_AVX2_SCAN
    if (p->avx2)
        scan_avx2(p);
    else
#endif
        scan_plain(p);
    for (Py_ssize_t i = 0; i < p->kept; i++) p->heap[i].row += (int32_t)p->first;
    return NULL;
}

/* The scan over `threads` threads (this one and threads - 1 started for it), each over an equal
   share of the rows; their heaps, side by side in `heap` (threads x count), are then sorted
   together, so the best `count` of them are the best of all rows (each share kept its own
   best count, ties to the lower row as a whole scan would). Returns how many lead `heap`. */
static Py_ssize_t scan(Part *whole, int threads) {
    Part parts[MOST_THREADS];
    Py_ssize_t share = whole->rows / threads;
    for (int t = 0; t < threads; t++) {
        parts[t] = *whole;
        parts[t].first = t * share;
        parts[t].rows = t == threads - 1 ? whole->rows - parts[t].first : share;
        parts[t].heap = whole->heap + t * whole->count;
    }
#ifdef HAVE_THREADS
    pthread_t started[MOST_THREADS];
    int running = 1;
    for (; running < threads; running++)
        if (pthread_create(&started[running], NULL, scan_part, &parts[running]) != 0) break;
    scan_part(&parts[0]);
    for (int t = 1; t < running; t++) pthread_join(started[t], NULL);
    for (int t = running; t < threads; t++) scan_part(&parts[t]); /* a thread not started */
#else
    for (int t = 0; t < threads; t++) scan_part(&parts[t]);
#endif
    Kept *heap = whole->heap;
    Py_ssize_t kept = 0;
    for (int t = 0; t < threads; t++) {
        memmove(heap + kept, parts[t].heap, (size_t)parts[t].kept * sizeof(Kept));
        kept += parts[t].kept;
    }
    qsort(heap, (size_t)kept, sizeof(Kept), best_first);
    return kept < whole->count ? kept : whole->count;
}

static int view_of(PyObject *object, Py_buffer *view, const char *formats, const char *what,
                   const char *type) {
    if (PyObject_GetBuffer(object, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return -1;
    const char *format = view->format ? view->format : "B";
    if (*format == '@' || *format == '=' || *format == '<') format++;
    if (view->itemsize != 1 || strlen(format) != 1 || !strchr(formats, *format)) {
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous buffer of %s", what, type);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(best_rows_doc,
"best_rows(sketches, query, count, threads=1, plain=False) -> bytes\n\n"
"The `count` rows of `sketches` (uint8, len(query) / 2 per row, C order: two 4-bit\n"
"coordinates a byte, as the module's text says) whose dot product with `query` (int8, a\n"
"multiple of 64 weights) is greatest, best first, ties to the lower row:\n"
"their numbers as int32 (native order), fewer when there are fewer rows. `threads` (1 to 16)\n"
"share the rows; a thread that cannot be started leaves its share to this one. `plain`: the\n"
"portable loop even where the processor has AVX2 (the same answer; the tests compare them).");

static PyObject *best_rows(PyObject *module, PyObject *args) {
    PyObject *sketches_arg, *query_arg;
    Py_ssize_t count;
    int threads = 1, plain = 0;
    if (!PyArg_ParseTuple(args, "OOn|ip:best_rows", &sketches_arg, &query_arg, &count, &threads,
                          &plain))
        return NULL;
    if (count < 0) {
        PyErr_SetString(PyExc_ValueError, "count must not be negative");
        return NULL;
    }
    if (threads < 1 || threads > MOST_THREADS) {
        PyErr_Format(PyExc_ValueError, "threads must be 1 to %d, got %d", MOST_THREADS, threads);
        return NULL;
    }
    Py_buffer sketches, query;
    if (view_of(sketches_arg, &sketches, "B", "sketches", "uint8") < 0) return NULL;
    if (view_of(query_arg, &query, "b", "query", "int8") < 0) {
        PyBuffer_Release(&sketches);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t rank = query.len;
    if (rank < 1 || rank > MOST_RANK || rank % BLOCK != 0) {
        PyErr_Format(PyExc_ValueError, "query must have a multiple of %d weights up to %d, got %zd",
                     BLOCK, MOST_RANK, rank);
        goto done;
    }
    if (sketches.len % (rank / 2) != 0) {
        PyErr_Format(PyExc_ValueError, "sketches hold %zd bytes, not whole rows of %zd",
                     sketches.len, rank / 2);
        goto done;
    }
    Py_ssize_t rows = sketches.len / (rank / 2);
    if (rows > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "more rows than a 32-bit row number holds");
        goto done;
    }
    if (count > rows) count = rows;
    if (threads > rows) threads = rows > 0 ? (int)rows : 1;
    Kept *heap = PyMem_RawMalloc((size_t)threads * (size_t)(count ? count : 1) * sizeof(Kept));
    if (heap == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Part whole = {sketches.buf, query.buf, 0, rows, rank, count, 0, heap, has_avx2 && !plain};
    Py_ssize_t kept;
    Py_BEGIN_ALLOW_THREADS
    kept = scan(&whole, threads);
    Py_END_ALLOW_THREADS
    result = PyBytes_FromStringAndSize(NULL, kept * (Py_ssize_t)sizeof(int32_t));
    if (result != NULL) {
        int32_t *out = (int32_t *)PyBytes_AS_STRING(result);
        for (Py_ssize_t i = 0; i < kept; i++) out[i] = heap[i].row;
    }
    PyMem_RawFree(heap);
done:
    PyBuffer_Release(&query);
    PyBuffer_Release(&sketches);
    return result;
}

static PyMethodDef methods[] = {
    {"best_rows", best_rows, METH_VARARGS, best_rows_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "himga.memory._sketch",
    "The scan of himga.memory.sketch, in C (_sketch.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__sketch(void) {
#ifdef HAVE_AVX2_SCAN
    __builtin_cpu_init();
    has_avx2 = __builtin_cpu_supports("avx2");
#endif
    return PyModule_Create(&module);
}
