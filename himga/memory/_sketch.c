/* himga.memory._sketch: the scan of himga.memory.sketch, in C.

   One function, best_rows: given n sketches of r 4-bit coordinates each (unsigned, 0 to 15, two
   a byte: in each BLOCK of 64 coordinates, byte j holds coordinate j in its low half and
   coordinate 32 + j in its high half; one C-ordered block of r / 2 bytes a row) and a query of
   r int8 weights, the `count` rows of greatest dot product, best first, ties to the lower row
   (r a multiple of 64). Integer arithmetic only (15 x 128 x MOST_RANK fits int32 with room),
   so the answer is the same on every machine and in each of its loops: the portable one,
   AVX2's and AVX-512's with VNNI (the best the processor has runs; `loops()` names those it
   has). A bounded heap keeps the best rows seen; a row enters only when it beats the worst
   kept, which after the first few thousand rows is rare, so the scan is the dot products. The
   rows may be shared out to a few threads (a scan of a large index is bound by memory, which
   one core does not exhaust on some machines; on others, by the core: hence the loops), or, as
   a SharedScan, taken a share at a time by whichever threads join it while it runs. The
   interpreter's lock is released while it runs (the caller keeps the sketches unchanged: the
   vector index's rule, no write beside a search). */

#if defined(__linux__)
#define _GNU_SOURCE /* sched_getcpu, pthread_attr_setaffinity_np */
#endif
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
#if defined(__linux__)
#include <sched.h>
#endif

enum { PORTABLE, AVX2, AVX512, LOOPS };
static const char *const loop_names[LOOPS] = {"portable", "avx2", "avx512"};
static int has_loop[LOOPS] = {1, 0, 0}; /* which the processor runs: set when the module loads */

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

/* One thread's share of a scan: rows [first, first + rows), its own heap of `count`.
   `halves`: the query's weights as AVX-512's loop reads them (paired_weights). */
typedef struct {
    const uint8_t *sketches;
    const int8_t *query, *halves;
    Py_ssize_t first, rows, rank, count, kept;
    Kept *heap;
    int loop;
} Part;

static void scan_plain(Part *p) {
    const Py_ssize_t bytes = p->rank / 2;
    const uint8_t *start = p->sketches + p->first * bytes;
    if (p->count == 0) return;
    for (Py_ssize_t i = 0; i < p->rows; i++)
        keep(p->heap, &p->kept, p->count, dot(start + i * bytes, p->query, p->rank),
             p->first + i);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_AVX2_SCAN 1
#include <immintrin.h>

/* AVX2's loop reads a block's 32 bytes at once and splits them into their low halves and their
   high halves (a mask, a shift), which line up with the block's first and last 32 weights; it
   multiplies those unsigned bytes by the signed weights and sums them in pairs into 16 bits
   (at most 2 x 15 x 128 a pair, so never saturated), then into 32. It takes four rows at a
   time, whose eight 32-bit partial sums each are added across in one go (three horizontal
   adds for the four, where one row alone takes a shuffle and two adds of its own): on an Intel
   Xeon whose scan keeps the core busy rather than waiting on memory, 0.79x the time of a row at
   a time with the sketches in the cache, and a hybrid Retrieve at 100k 0.97x (the README). */
__attribute__((target("avx2"))) static inline __m256i avx2_block(__m256i sum, __m256i x,
                                                                 __m256i first, __m256i last) {
    const __m256i low = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    __m256i pairs = _mm256_add_epi16(
        _mm256_maddubs_epi16(_mm256_and_si256(x, low), first),
        _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(x, 4), low), last));
    return _mm256_add_epi32(sum, _mm256_madd_epi16(pairs, ones));
}

/* the four rows' sums of 8 partial sums each (a, b, c, d), as four int32 in that order */
__attribute__((target("avx2"))) static inline __m128i across4(__m256i a, __m256i b, __m256i c,
                                                              __m256i d) {
    __m256i all = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    return _mm_add_epi32(_mm256_castsi256_si128(all), _mm256_extracti128_si256(all, 1));
}

__attribute__((target("avx2"))) static void scan_avx2(Part *p) {
    const Py_ssize_t rank = p->rank, bytes = rank / 2;
    const uint8_t *start = p->sketches + p->first * bytes;
    if (p->count == 0) return;
    Py_ssize_t i = 0;
    int32_t four[4];
    for (; i + 4 <= p->rows; i += 4) {
        const uint8_t *row = start + i * bytes;
        __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
        for (Py_ssize_t at = 0; at < rank; at += BLOCK) {
            const __m256i first = _mm256_loadu_si256((const __m256i *)(p->query + at));
            const __m256i last = _mm256_loadu_si256((const __m256i *)(p->query + at + HALF));
            const uint8_t *block = row + at / 2;
            s0 = avx2_block(s0, _mm256_loadu_si256((const __m256i *)block), first, last);
            s1 = avx2_block(s1, _mm256_loadu_si256((const __m256i *)(block + bytes)), first, last);
            s2 = avx2_block(s2, _mm256_loadu_si256((const __m256i *)(block + 2 * bytes)), first,
                            last);
            s3 = avx2_block(s3, _mm256_loadu_si256((const __m256i *)(block + 3 * bytes)), first,
                            last);
        }
        _mm_storeu_si128((__m128i *)four, across4(s0, s1, s2, s3));
        for (int j = 0; j < 4; j++) keep(p->heap, &p->kept, p->count, four[j], p->first + i + j);
    }
    for (; i < p->rows; i++) { /* the last rows, one at a time */
        const uint8_t *row = start + i * bytes;
        __m256i sum = _mm256_setzero_si256(), zero = sum;
        for (Py_ssize_t at = 0; at < rank; at += BLOCK)
            sum = avx2_block(sum, _mm256_loadu_si256((const __m256i *)(row + at / 2)),
                             _mm256_loadu_si256((const __m256i *)(p->query + at)),
                             _mm256_loadu_si256((const __m256i *)(p->query + at + HALF)));
        _mm_storeu_si128((__m128i *)four, across4(sum, zero, zero, zero));
        keep(p->heap, &p->kept, p->count, four[0], p->first + i);
    }
}

/* AVX-512's loop with VNNI reads 64 bytes (two blocks) a step: their low halves meet the
   blocks' first 32 weights each, their high halves the last 32 (`halves`, the weights laid out
   so), and one instruction multiplies 64 unsigned bytes by 64 signed weights and adds each four
   products into a 32-bit sum (exact: never saturated). A rank that is an odd number of blocks
   ends with a step of one block, its upper 32 bytes masked off. Four rows at a time, as AVX2's:
   on that Xeon 0.59x the time of AVX2's row at a time in the cache, 0.85x to 0.90x from memory,
   and a hybrid Retrieve at 100k 0.94x (the README). */
__attribute__((target("avx2,avx512f,avx512bw,avx512vnni"))) static inline __m512i
avx512_step(__m512i sum, __m512i x, __m512i first, __m512i last) {
    const __m512i low = _mm512_set1_epi8(0x0F);
    sum = _mm512_dpbusd_epi32(sum, _mm512_and_si512(x, low), first);
    return _mm512_dpbusd_epi32(sum, _mm512_and_si512(_mm512_srli_epi16(x, 4), low), last);
}

__attribute__((target("avx2,avx512f,avx512bw,avx512vnni"))) static inline __m256i
avx512_fold(__m512i sum) {
    return _mm256_add_epi32(_mm512_castsi512_si256(sum), _mm512_extracti64x4_epi64(sum, 1));
}

__attribute__((target("avx2,avx512f,avx512bw,avx512vnni"))) static void scan_avx512(Part *p) {
    const Py_ssize_t rank = p->rank, bytes = rank / 2, steps = (bytes + 63) / 64;
    const uint8_t *start = p->sketches + p->first * bytes;
    const __mmask64 whole = ~(__mmask64)0, half = 0xFFFFFFFFu;
    const int8_t *first = p->halves, *last = p->halves + bytes;
    if (p->count == 0) return;
    Py_ssize_t i = 0;
    int32_t four[4];
    for (; i + 4 <= p->rows; i += 4) {
        const uint8_t *row = start + i * bytes;
        __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
        for (Py_ssize_t k = 0; k < steps; k++) {
            const __mmask64 m = 64 * k + 64 <= bytes ? whole : half;
            const __m512i f = _mm512_maskz_loadu_epi8(m, first + 64 * k);
            const __m512i l = _mm512_maskz_loadu_epi8(m, last + 64 * k);
            const uint8_t *at = row + 64 * k;
            s0 = avx512_step(s0, _mm512_maskz_loadu_epi8(m, at), f, l);
            s1 = avx512_step(s1, _mm512_maskz_loadu_epi8(m, at + bytes), f, l);
            s2 = avx512_step(s2, _mm512_maskz_loadu_epi8(m, at + 2 * bytes), f, l);
            s3 = avx512_step(s3, _mm512_maskz_loadu_epi8(m, at + 3 * bytes), f, l);
        }
        _mm_storeu_si128((__m128i *)four, across4(avx512_fold(s0), avx512_fold(s1),
                                                 avx512_fold(s2), avx512_fold(s3)));
        for (int j = 0; j < 4; j++) keep(p->heap, &p->kept, p->count, four[j], p->first + i + j);
    }
    for (; i < p->rows; i++) { /* the last rows, one at a time */
        const uint8_t *row = start + i * bytes;
        __m512i sum = _mm512_setzero_si512();
        for (Py_ssize_t k = 0; k < steps; k++) {
            const __mmask64 m = 64 * k + 64 <= bytes ? whole : half;
            sum = avx512_step(sum, _mm512_maskz_loadu_epi8(m, row + 64 * k),
                              _mm512_maskz_loadu_epi8(m, first + 64 * k),
                              _mm512_maskz_loadu_epi8(m, last + 64 * k));
        }
        keep(p->heap, &p->kept, p->count, _mm512_reduce_add_epi32(sum), p->first + i);
    }
}
#endif

/* The query's weights as AVX-512's loop reads them: for each block, its first 32 weights into
   the first half of `halves`, its last 32 into the second (rank weights in all). */
static void paired_weights(const int8_t *query, Py_ssize_t rank, int8_t *halves) {
    const Py_ssize_t bytes = rank / 2;
    for (Py_ssize_t b = 0; b < rank / BLOCK; b++) {
        memcpy(halves + b * HALF, query + b * BLOCK, HALF);
        memcpy(halves + bytes + b * HALF, query + b * BLOCK + HALF, HALF);
    }
}

static void *scan_part(void *arg) {
    Part *p = arg;
#ifdef HAVE_AVX2_SCAN
    if (p->loop == AVX512)
        scan_avx512(p);
    else if (p->loop == AVX2)
        scan_avx2(p);
    else
#endif
        scan_plain(p);
    return NULL;
}

#ifdef HAVE_THREADS
/* Sets `attr` for the scan's helper threads: on any of the caller's cores but the one it runs on
   (Linux; elsewhere, and when the caller may run on one core only, returns 0: no attributes).
   Left to itself, Linux may start a helper on the caller's own core when the other core was
   busy just before (its load is an average that decays over milliseconds), and the helper's
   share then waits for the caller's: on a 2-core virtual machine, hybrid Retrieves at 100k
   vectors did so in up to 3 scans in 10, and 8 in 10 when the scan followed the model on its
   thread, 0.87 ms late (benchmarks/README.md, the 100k target on the Intel Xeon). */
static int helpers_elsewhere(pthread_attr_t *attr) {
#if defined(__linux__)
    cpu_set_t allowed;
    int here = sched_getcpu();
    if (here < 0 || here >= CPU_SETSIZE || sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return 0;
    CPU_CLR(here, &allowed);
    if (CPU_COUNT(&allowed) == 0 || pthread_attr_init(attr) != 0) return 0;
    if (pthread_attr_setaffinity_np(attr, sizeof allowed, &allowed) != 0) {
        pthread_attr_destroy(attr);
        return 0;
    }
    return 1;
#else
    (void)attr;
    return 0;
#endif
}
#endif

/* The best `count` rows of the heaps of `parts` (`shares` of them), best first, into `heap`
   (room for every row the parts kept; it may be the first part's own): the best of all rows,
   since each part kept its own best `count`, ties to the lower row. Returns how many. */
static Py_ssize_t merged(const Part *parts, int shares, Kept *heap, Py_ssize_t count) {
    Py_ssize_t kept = 0;
    for (int t = 0; t < shares; t++) {
        memmove(heap + kept, parts[t].heap, (size_t)parts[t].kept * sizeof(Kept));
        kept += parts[t].kept;
    }
    qsort(heap, (size_t)kept, sizeof(Kept), best_first);
    return kept < count ? kept : count;
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
    pthread_attr_t elsewhere;
    int running = 1, attributes = threads > 1 && helpers_elsewhere(&elsewhere);
    for (; running < threads; running++)
        if (pthread_create(&started[running], attributes ? &elsewhere : NULL, scan_part,
                           &parts[running]) != 0)
            break;
    if (attributes) pthread_attr_destroy(&elsewhere);
    scan_part(&parts[0]);
    for (int t = 1; t < running; t++) pthread_join(started[t], NULL);
    for (int t = running; t < threads; t++) scan_part(&parts[t]); /* a thread not started */
#else
    for (int t = 0; t < threads; t++) scan_part(&parts[t]);
#endif
    return merged(parts, threads, whole->heap, whole->count);
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
"best_rows(sketches, query, count, threads=1, loop=None) -> bytes\n\n"
"The `count` rows of `sketches` (uint8, len(query) / 2 per row, C order: two 4-bit\n"
"coordinates a byte, as the module's text says) whose dot product with `query` (int8, a\n"
"multiple of 64 weights) is greatest, best first, ties to the lower row:\n"
"their numbers as int32 (native order), fewer when there are fewer rows. `threads` (1 to 16)\n"
"share the rows; a thread that cannot be started leaves its share to this one. `loop`: one of\n"
"loops() by name (the same answer from each; the tests compare them), None for the best.");

/* Reads a scan's arguments into `whole` (its views held in `sketches` and `query`, AVX-512's
   weights allocated: `release_scan` gives them back), `count` at most every row; -1 with the
   error set (nothing held) when they cannot be scanned. */
static int open_scan(PyObject *sketches_arg, PyObject *query_arg, Py_ssize_t count,
                     const char *loop_name, Py_buffer *sketches, Py_buffer *query, Part *whole) {
    int loop = LOOPS;
    for (int l = 0; l < LOOPS; l++) {
        if (loop_name == NULL ? has_loop[l] : strcmp(loop_name, loop_names[l]) == 0) loop = l;
    }
    if (loop == LOOPS || !has_loop[loop]) {
        PyErr_Format(PyExc_ValueError, "no loop %s on this processor (see loops())",
                     loop_name ? loop_name : "");
        return -1;
    }
    if (count < 0) {
        PyErr_SetString(PyExc_ValueError, "count must not be negative");
        return -1;
    }
    if (view_of(sketches_arg, sketches, "B", "sketches", "uint8") < 0) return -1;
    if (view_of(query_arg, query, "b", "query", "int8") < 0) {
        PyBuffer_Release(sketches);
        return -1;
    }
    Py_ssize_t rank = query->len;
    if (rank < 1 || rank > MOST_RANK || rank % BLOCK != 0) {
        PyErr_Format(PyExc_ValueError, "query must have a multiple of %d weights up to %d, got %zd",
                     BLOCK, MOST_RANK, rank);
        goto refused;
    }
    if (sketches->len % (rank / 2) != 0) {
        PyErr_Format(PyExc_ValueError, "sketches hold %zd bytes, not whole rows of %zd",
                     sketches->len, rank / 2);
        goto refused;
    }
    Py_ssize_t rows = sketches->len / (rank / 2);
    if (rows > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "more rows than a 32-bit row number holds");
        goto refused;
    }
    int8_t *halves = loop == AVX512 ? PyMem_RawMalloc((size_t)rank) : NULL;
    if (loop == AVX512 && halves == NULL) {
        PyErr_NoMemory();
        goto refused;
    }
    if (halves != NULL) paired_weights(query->buf, rank, halves);
    Part opened = {sketches->buf, query->buf, halves, 0, rows, rank, count > rows ? rows : count,
                   0, NULL, loop};
    *whole = opened;
    return 0;
refused:
    PyBuffer_Release(query);
    PyBuffer_Release(sketches);
    return -1;
}

static void release_scan(Py_buffer *sketches, Py_buffer *query, Part *whole) {
    PyMem_RawFree((void *)whole->halves);
    whole->halves = NULL;
    PyBuffer_Release(query);
    PyBuffer_Release(sketches);
}

/* The rows of `heap`'s first `kept` entries, as best_rows answers them. */
static PyObject *rows_of(const Kept *heap, Py_ssize_t kept) {
    PyObject *result = PyBytes_FromStringAndSize(NULL, kept * (Py_ssize_t)sizeof(int32_t));
    if (result != NULL) {
        int32_t *out = (int32_t *)PyBytes_AS_STRING(result);
        for (Py_ssize_t i = 0; i < kept; i++) out[i] = heap[i].row;
    }
    return result;
}

static PyObject *best_rows(PyObject *module, PyObject *args) {
    PyObject *sketches_arg, *query_arg;
    Py_ssize_t count;
    int threads = 1;
    const char *loop_name = NULL;
    if (!PyArg_ParseTuple(args, "OOn|iz:best_rows", &sketches_arg, &query_arg, &count, &threads,
                          &loop_name))
        return NULL;
    if (threads < 1 || threads > MOST_THREADS) {
        PyErr_Format(PyExc_ValueError, "threads must be 1 to %d, got %d", MOST_THREADS, threads);
        return NULL;
    }
    Py_buffer sketches, query;
    Part whole;
    if (open_scan(sketches_arg, query_arg, count, loop_name, &sketches, &query, &whole) < 0)
        return NULL;
    PyObject *result = NULL;
    if (threads > whole.rows) threads = whole.rows > 0 ? (int)whole.rows : 1;
    whole.heap =
        PyMem_RawMalloc((size_t)threads * (size_t)(whole.count ? whole.count : 1) * sizeof(Kept));
    if (whole.heap == NULL) {
        PyErr_NoMemory();
    } else {
        Py_ssize_t kept;
        Py_BEGIN_ALLOW_THREADS
        kept = scan(&whole, threads);
        Py_END_ALLOW_THREADS
        result = rows_of(whole.heap, kept);
        PyMem_RawFree(whole.heap);
    }
    release_scan(&sketches, &query, &whole);
    return result;
}

/* --- a scan shared by the threads that take part in it ---------------------------------- */

#define SHARE_ROWS 16384 /* the rows a thread takes at a time */

/* SharedScan: the scan of best_rows, its rows taken SHARE_ROWS at a time by every thread that
   calls share() (each into a heap of its own, at most MOST_THREADS of them) until none is
   left; best() takes part too, then waits for the others and answers as best_rows does. A
   thread joins when it has nothing better to do: a hybrid search's model thread starts the
   scan beside the keyword side, and the caller, done ranking words, joins it rather than wait
   (himga.memory.beside). The locks are Python's own, taken without the interpreter's lock. */
typedef struct {
    PyObject_HEAD
    Py_buffer sketches, query;
    Part whole;
    Part parts[MOST_THREADS];
    Kept *heaps;                             /* MOST_THREADS x count, each part's */
    Py_ssize_t next;                         /* the first row no thread has taken */
    int joined;                              /* how many threads took part */
    Py_ssize_t kept;                         /* how many rows best() found (-1: not yet) */
    PyThread_type_lock claim;                /* guards next and joined */
    PyThread_type_lock running[MOST_THREADS]; /* held by each part while it scans */
    PyObject *best;                          /* the answer, once made */
} SharedScan;

static void shared_dealloc(SharedScan *self) {
    for (int t = 0; t < MOST_THREADS; t++)
        if (self->running[t]) PyThread_free_lock(self->running[t]);
    if (self->claim) PyThread_free_lock(self->claim);
    PyMem_RawFree(self->heaps);
    if (self->whole.sketches != NULL) release_scan(&self->sketches, &self->query, &self->whole);
    Py_XDECREF(self->best);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Take part: scan rows until none is left (without the interpreter's lock). */
static void take_part(SharedScan *self) {
    PyThread_acquire_lock(self->claim, WAIT_LOCK);
    int part = self->joined < MOST_THREADS ? self->joined++ : -1;
    if (part >= 0) PyThread_acquire_lock(self->running[part], WAIT_LOCK);
    PyThread_release_lock(self->claim);
    if (part < 0) return; /* as many threads as there are heaps take part already */
    Part *p = &self->parts[part];
    const Py_ssize_t rows = self->whole.rows;
    for (;;) {
        PyThread_acquire_lock(self->claim, WAIT_LOCK);
        Py_ssize_t first = self->next, end = first + SHARE_ROWS < rows ? first + SHARE_ROWS : rows;
        self->next = end > first ? end : first;
        PyThread_release_lock(self->claim);
        if (first >= rows) break;
        p->first = first;
        p->rows = end - first;
        scan_part(p);
    }
    PyThread_release_lock(self->running[part]);
}

PyDoc_STRVAR(share_doc,
"share() -> None\n\n"
"Take part in the scan: take rows and scan them until none is left.");

static PyObject *shared_share(SharedScan *self, PyObject *unused) {
    Py_BEGIN_ALLOW_THREADS
    take_part(self);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

PyDoc_STRVAR(best_doc,
"best() -> bytes\n\n"
"Take part in the scan, wait for every thread that took part, and answer as best_rows does\n"
"(the same answer each time it is asked).");

/* Take part, then wait for every part that took rows (without the interpreter's lock): every
   row is taken when take_part returns, so a part joining later scans nothing. Returns how many
   parts took part by then. */
static int every_part_ended(SharedScan *self) {
    take_part(self);
    PyThread_acquire_lock(self->claim, WAIT_LOCK);
    int parts = self->joined;
    PyThread_release_lock(self->claim);
    for (int t = 0; t < parts; t++) { /* each part's lock is free once it has ended */
        PyThread_acquire_lock(self->running[t], WAIT_LOCK);
        PyThread_release_lock(self->running[t]);
    }
    return parts; /* at most MOST_THREADS: take_part counts no more */
}

PyDoc_STRVAR(wait_doc,
"wait() -> None\n\n"
"Take part in the scan should rows be left, then wait for every thread that took part: once\n"
"it returns no part reads the sketches any more. It cannot fail.");

static PyObject *shared_wait(SharedScan *self, PyObject *unused) {
    Py_BEGIN_ALLOW_THREADS
    every_part_ended(self);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *shared_best(SharedScan *self, PyObject *unused) {
    if (self->best == NULL) {
        Py_BEGIN_ALLOW_THREADS
        int parts = every_part_ended(self);
        PyThread_acquire_lock(self->claim, WAIT_LOCK); /* merged once, should two threads ask */
        if (self->kept < 0) self->kept = merged(self->parts, parts, self->heaps, self->whole.count);
        PyThread_release_lock(self->claim);
        Py_END_ALLOW_THREADS
        if (self->best == NULL) self->best = rows_of(self->heaps, self->kept);
        if (self->best == NULL) return NULL;
    }
    Py_INCREF(self->best);
    return self->best;
}

static PyMethodDef shared_methods[] = {
    {"share", (PyCFunction)shared_share, METH_NOARGS, share_doc},
    {"best", (PyCFunction)shared_best, METH_NOARGS, best_doc},
    {"wait", (PyCFunction)shared_wait, METH_NOARGS, wait_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(shared_doc,
"SharedScan(sketches, query, count, loop=None)\n\n"
"best_rows's scan, shared by the threads that call share() and best() on it (see the\n"
"module's text): the same arguments and the same answer, from best().");

static PyObject *shared_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *sketches_arg, *query_arg;
    Py_ssize_t count;
    const char *loop_name = NULL;
    static char *names[] = {"sketches", "query", "count", "loop", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOn|z:SharedScan", names, &sketches_arg,
                                     &query_arg, &count, &loop_name))
        return NULL;
    SharedScan *self = (SharedScan *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    if (open_scan(sketches_arg, query_arg, count, loop_name, &self->sketches, &self->query,
                  &self->whole) < 0) {
        self->whole.sketches = NULL;
        Py_DECREF(self);
        return NULL;
    }
    self->kept = -1;
    Py_ssize_t room = self->whole.count ? self->whole.count : 1;
    self->heaps = PyMem_RawMalloc((size_t)MOST_THREADS * (size_t)room * sizeof(Kept));
    self->claim = PyThread_allocate_lock();
    int locks = self->claim != NULL;
    for (int t = 0; t < MOST_THREADS; t++) {
        self->running[t] = PyThread_allocate_lock();
        locks = locks && self->running[t] != NULL;
        self->parts[t] = self->whole;
        self->parts[t].heap = self->heaps ? self->heaps + t * room : NULL;
    }
    if (self->heaps == NULL || !locks) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static PyTypeObject SharedScanType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "himga.memory._sketch.SharedScan",
    .tp_basicsize = sizeof(SharedScan),
    .tp_dealloc = (destructor)shared_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = shared_doc,
    .tp_methods = shared_methods,
    .tp_new = shared_new,
};

PyDoc_STRVAR(loops_doc,
"loops() -> tuple[str, ...]\n\n"
"The names of the scan's loops this processor runs, the one best_rows uses last.");

static PyObject *loops(PyObject *module, PyObject *unused) {
    PyObject *names[LOOPS];
    Py_ssize_t count = 0;
    for (int l = 0; l < LOOPS; l++)
        if (has_loop[l]) names[count++] = PyUnicode_FromString(loop_names[l]);
    PyObject *found = PyTuple_New(count);
    for (Py_ssize_t i = 0; i < count; i++) {
        if (found == NULL || names[i] == NULL) {
            Py_XDECREF(names[i]);
            Py_CLEAR(found);
        } else {
            PyTuple_SET_ITEM(found, i, names[i]);
        }
    }
    return found;
}

static PyMethodDef methods[] = {
    {"best_rows", best_rows, METH_VARARGS, best_rows_doc},
    {"loops", loops, METH_NOARGS, loops_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "himga.memory._sketch",
    "The scan of himga.memory.sketch, in C (_sketch.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__sketch(void) {
#ifdef HAVE_AVX2_SCAN
    __builtin_cpu_init();
    has_loop[AVX2] = __builtin_cpu_supports("avx2");
    has_loop[AVX512] = has_loop[AVX2] && __builtin_cpu_supports("avx512f") &&
                       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
#endif
    if (PyType_Ready(&SharedScanType) < 0) return NULL;
    PyObject *created = PyModule_Create(&module);
    if (created == NULL) return NULL;
    Py_INCREF(&SharedScanType);
    if (PyModule_AddObject(created, "SharedScan", (PyObject *)&SharedScanType) < 0) {
        Py_DECREF(&SharedScanType);
        Py_DECREF(created);
        return NULL;
    }
    return created;
}
