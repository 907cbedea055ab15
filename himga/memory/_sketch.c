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
   a SharedScan, taken a share at a time by whichever threads join it while it runs. Given
   the rows' 2-bit codes as well, it may first scan those, half the bytes, and rank only their
   best rows by the sketches ("the 2-bit first stage", below). The interpreter's lock is
   released while it runs (the caller keeps the sketches unchanged: the vector index's rule,
   no write beside a search). The query's int8 weights are made here too (`weights`: float
   arithmetic, the one part that is), in one call rather than numpy's five. */

#if defined(__linux__)
#define _GNU_SOURCE /* sched_getcpu, pthread_attr_setaffinity_np */
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "_exact.h"

#define MOST_RANK 65536
#define BLOCK 64
#define HALF (BLOCK / 2)
#define MOST_THREADS 16

#if !defined(_WIN32)
#define HAVE_THREADS 1
#include <pthread.h>
#endif
#if defined(HAVE_THREADS) || defined(__linux__)
#include <sched.h> /* sched_yield; on Linux sched_getcpu too */
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
    /* The 2-bit first stage, where `coarse` is given (see "the 2-bit first stage" below): the
       rows' 2-bit codes, and the pool of rows kept so far (`pooled` of room for 2 x `keep`),
       which takes a row only above `floor` once it was first cut down to its best `keep`. */
    const uint8_t *coarse;
    Py_ssize_t keep, pooled;
    int32_t floor;
    Kept *pool;
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

/* one row's dot product, as scan_avx2 makes it */
__attribute__((target("avx2"))) static inline int32_t avx2_row(const uint8_t *row,
                                                               const int8_t *query,
                                                               Py_ssize_t rank) {
    __m256i sum = _mm256_setzero_si256(), zero = sum;
    int32_t four[4];
    for (Py_ssize_t at = 0; at < rank; at += BLOCK)
        sum = avx2_block(sum, _mm256_loadu_si256((const __m256i *)(row + at / 2)),
                         _mm256_loadu_si256((const __m256i *)(query + at)),
                         _mm256_loadu_si256((const __m256i *)(query + at + HALF)));
    _mm_storeu_si128((__m128i *)four, across4(sum, zero, zero, zero));
    return four[0];
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
    for (; i < p->rows; i++) /* the last rows, one at a time */
        keep(p->heap, &p->kept, p->count, avx2_row(start + i * bytes, p->query, rank),
             p->first + i);
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

/* one row's dot product (`bytes` of sketch), as scan_avx512 makes it */
__attribute__((target("avx2,avx512f,avx512bw,avx512vnni"))) static inline int32_t
avx512_row(const uint8_t *row, const int8_t *halves, Py_ssize_t bytes) {
    const __mmask64 whole = ~(__mmask64)0, half = 0xFFFFFFFFu;
    __m512i sum = _mm512_setzero_si512();
    for (Py_ssize_t at = 0; at < bytes; at += 64) {
        const __mmask64 m = at + 64 <= bytes ? whole : half;
        sum = avx512_step(sum, _mm512_maskz_loadu_epi8(m, row + at),
                          _mm512_maskz_loadu_epi8(m, halves + at),
                          _mm512_maskz_loadu_epi8(m, halves + bytes + at));
    }
    return _mm512_reduce_add_epi32(sum);
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
    for (; i < p->rows; i++) /* the last rows, one at a time */
        keep(p->heap, &p->kept, p->count, avx512_row(start + i * bytes, p->halves, bytes),
             p->first + i);
}
#endif

/* --- the 2-bit first stage ----------------------------------------------------------------

   Where a scan is given `coarse` (best_rows's and SharedScan's argument) and keeps fewer rows
   than it has, it runs in two stages. The first scans each row's 2-bit codes (a quarter of a
   byte a coordinate: half the bytes of the sketches, which on a large index is what the scan's
   time is) and keeps the `keep` rows of greatest dot product with the same int8 weights; the
   second scores those rows whole from their sketches and answers their best `count`, as the
   scan without it does.

   The codes lie in blocks of LANES (16) rows, so that one instruction adds into the sums of
   16 rows and no row's sum is added across: a block is rank / 16 groups of 64 bytes, a group
   four bytes of each of its rows in turn (row r's at 4r), and byte i of group g holds the
   codes of coordinates 16g + 4k + i in its bits 2k and 2k + 1 (k = 0 to 3). So the weights of
   each byte's k-th codes in a group are four that lie together in the query (16g + 4k), read
   as one 32-bit number and given to every row. The codes of rows past the last in its block
   are never ranked. Integer arithmetic only, so the answer is the same on every machine, in
   each loop and on any threads: each part keeps its own best `keep` in a pool, the pools' best
   `keep` together are the best of all rows (ties to the lower row), and the second stage ranks
   those by the sketches as the one-stage scan would. */

#define LANES 16

/* The bytes of a block of 2-bit codes, for `rank` coordinates. */
static inline Py_ssize_t coarse_block(Py_ssize_t rank) { return LANES * rank / 4; }

/* a ranks above b */
static inline int better(const Kept *a, const Kept *b) { return worse(b, a); }

/* Reorders `rows` (n of them) so that the best `k` lead, in no order, by quickselect with the
   median of three as its pivot (every two rows rank apart, their numbers differing). Each step
   a row takes is a branch the processor cannot foresee: select_best's choice for few rows, or
   for rows of one score. */
static void quickselect_best(Kept *rows, Py_ssize_t n, Py_ssize_t k) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < k && k < hi && hi - lo > 1) {
        Kept a = rows[lo], b = rows[lo + (hi - lo) / 2], c = rows[hi - 1], pivot;
        if (better(&a, &b))
            pivot = better(&b, &c) ? b : (better(&a, &c) ? c : a);
        else
            pivot = better(&a, &c) ? a : (better(&b, &c) ? c : b);
        Py_ssize_t i = lo, j = hi - 1;
        while (i <= j) { /* Hoare's partition: the pivot itself stops both */
            while (better(&rows[i], &pivot)) i++;
            while (better(&pivot, &rows[j])) j--;
            if (i <= j) {
                Kept swap = rows[i];
                rows[i++] = rows[j];
                rows[j--] = swap;
            }
        }
        /* rows[lo..j] rank at or above the pivot, rows[i..hi) at or below, between them it */
        if (k <= j + 1)
            hi = j + 1;
        else if (k >= i)
            lo = i;
        else
            return;
    }
}

#define RADIX_BITS 11
#define RADIX_FROM 1024 /* fewer rows: quickselect (the counts' clearing would outweigh it) */

/* A score as an unsigned key of the same order. */
static inline uint32_t score_key(int32_t score) { return (uint32_t)score ^ 0x80000000u; }

/* Moves the rows scoring above `score` (or, `equal`, scoring it) to the front of `rows` (n of
   them), in no order; returns how many. Every row is swapped and the count moved by the test,
   with no branch on it: here a row's side is a coin toss (half the pool or more is kept), which
   a branch would mispredict. */
static Py_ssize_t to_front(Kept *rows, Py_ssize_t n, int32_t score, int equal) {
    Py_ssize_t front = 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        const Kept row = rows[j];
        const Py_ssize_t taken = equal ? row.score == score : row.score > score;
        rows[j] = rows[front];
        rows[front] = row;
        front += taken;
    }
    return front;
}

/* Reorders `rows` (n of them) so that the best `k` lead, in no order: the same rows as
   quickselect_best takes, found by their scores' bits rather than by comparisons. Three counts
   of the keys' digits (11, 11 and 10 bits, each over the rows whose higher digits are the k-th
   best's) give the k-th best score and how many rows score above it; the rows above it are
   moved to the front, then those of that score, of which the lowest-numbered are kept
   (quickselect_best among them, where more share it than are wanted). */
static void select_best(Kept *rows, Py_ssize_t n, Py_ssize_t k) {
    if (k <= 0 || k >= n) return;
    if (n < RADIX_FROM) {
        quickselect_best(rows, n, k);
        return;
    }
    Py_ssize_t counts[1 << RADIX_BITS];
    uint32_t prefix = 0; /* the k-th best key's digits found so far, in place */
    Py_ssize_t above = 0; /* rows whose keys' digits found so far are above prefix's */
    const int shifts[3] = {21, 10, 0}, widths[3] = {11, 11, 10};
    for (int d = 0; d < 3; d++) {
        const int shift = shifts[d], digits = 1 << widths[d];
        const uint32_t high = d == 0 ? 0 : ~0u << (shift + widths[d]); /* the digits found */
        memset(counts, 0, (size_t)digits * sizeof counts[0]);
        for (Py_ssize_t i = 0; i < n; i++) {
            const uint32_t key = score_key(rows[i].score);
            if ((key & high) == prefix) counts[(key >> shift) & (uint32_t)(digits - 1)]++;
        }
        int digit = digits - 1;
        while (above + counts[digit] < k) above += counts[digit--];
        prefix |= (uint32_t)digit << shift;
    }
    const int32_t kth = (int32_t)(prefix ^ 0x80000000u); /* the k-th best score */
    to_front(rows, n, kth, 0);                            /* the `above` rows scoring more */
    const Py_ssize_t tied = to_front(rows + above, n - above, kth, 1);
    if (above + tied > k) quickselect_best(rows + above, tied, k - above);
}

/* The first stage's step for one row's 2-bit score: into the pool, unless its score is at most
   the floor: the sample's (sampled_floor), or once the pool was cut down to its best `keep`,
   the worst of those (a part's rows come in ascending order, so a row of equal score ranks
   below it). A full pool is cut down again. */
static inline void collect(Part *p, int32_t score, Py_ssize_t row) {
    if (score <= p->floor) return;
    Kept here = {score, (int32_t)row};
    p->pool[p->pooled++] = here;
    if (p->pooled < 2 * p->keep) return;
    select_best(p->pool, p->pooled, p->keep);
    p->pooled = p->keep;
    int32_t least = p->pool[0].score;
    for (Py_ssize_t i = 1; i < p->keep; i++)
        if (p->pool[i].score < least) least = p->pool[i].score;
    p->floor = least;
}

/* The rows of one block's scores (`scores`, its first `rows` ranked), from row `first`. */
static inline void collect_block(Part *p, const int32_t *scores, Py_ssize_t first, int rows) {
    for (int r = 0; r < rows; r++)
        if (scores[r] > p->floor) collect(p, scores[r], first + r);
}

/* One block's 16 scores, in plain C. */
static void coarse_plain_block(const uint8_t *block, const int8_t *query, Py_ssize_t rank,
                               int32_t *scores) {
    for (int r = 0; r < LANES; r++) scores[r] = 0;
    for (Py_ssize_t g = 0; g < rank / 16; g++) {
        const uint8_t *group = block + 64 * g;
        const int8_t *w = query + 16 * g;
        for (int r = 0; r < LANES; r++)
            for (int i = 0; i < 4; i++) {
                const int32_t b = group[4 * r + i];
                scores[r] += (b & 3) * (int32_t)w[i] + ((b >> 2) & 3) * (int32_t)w[4 + i] +
                             ((b >> 4) & 3) * (int32_t)w[8 + i] + (b >> 6) * (int32_t)w[12 + i];
            }
    }
}

/* The part's rows (its first a block's first row), block by block, by `block_scores`. */
#define COARSE_SCAN(p, block_scores)                                                           \
    do {                                                                                       \
        const Py_ssize_t bytes = coarse_block((p)->rank);                                      \
        int32_t scores[LANES];                                                                 \
        for (Py_ssize_t done = 0; done < (p)->rows; done += LANES) {                           \
            const Py_ssize_t at = (p)->first + done;                                           \
            block_scores((p)->coarse + at / LANES * bytes, (p)->query, (p)->rank, scores);     \
            collect_block(p, scores, at,                                                       \
                          (p)->rows - done < LANES ? (int)((p)->rows - done) : LANES);         \
        }                                                                                      \
    } while (0)

static void coarse_plain(Part *p) { COARSE_SCAN(p, coarse_plain_block); }

/* a group's four weights of codes k, given to each row */
static inline int32_t weights_of(const int8_t *query, Py_ssize_t g, int k) {
    int32_t four;
    memcpy(&four, query + 16 * g + 4 * k, sizeof four);
    return four;
}

#ifdef HAVE_AVX2_SCAN
/* AVX2's first stage: 32 bytes (8 rows of a group) at a time, each bit pair shifted down and
   masked to a code of 0 to 3, multiplied by its four weights and summed in pairs into 16 bits
   (the four sums at most 4 x 2 x 3 x 128 in size, never saturated), then into each row's 32. */
__attribute__((target("avx2"))) static void coarse_avx2_block(const uint8_t *block,
                                                              const int8_t *query,
                                                              Py_ssize_t rank, int32_t *scores) {
    const __m256i three = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
    __m256i low = _mm256_setzero_si256(), high = low; /* rows 0-7, rows 8-15 */
    for (Py_ssize_t g = 0; g < rank / 16; g++) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(block + 64 * g));
        const __m256i y = _mm256_loadu_si256((const __m256i *)(block + 64 * g + 32));
        __m256i lows = _mm256_setzero_si256(), highs = lows;
        for (int k = 0; k < 4; k++) {
            const __m256i w = _mm256_set1_epi32(weights_of(query, g, k));
            lows = _mm256_add_epi16(
                lows, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(x, 2 * k), three), w));
            highs = _mm256_add_epi16(
                highs, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(y, 2 * k), three), w));
        }
        low = _mm256_add_epi32(low, _mm256_madd_epi16(lows, ones));
        high = _mm256_add_epi32(high, _mm256_madd_epi16(highs, ones));
    }
    _mm256_storeu_si256((__m256i *)scores, low);
    _mm256_storeu_si256((__m256i *)(scores + 8), high);
}

static void coarse_avx2(Part *p) { COARSE_SCAN(p, coarse_avx2_block); }

/* AVX-512's first stage, with VNNI: a group's 64 bytes at once, each bit pair masked in place
   (not shifted) and multiplied by its four weights into a sum of its own, so the k-th sum
   counts its codes 4^k times over; each is a multiple of 4^k, so shifting it down by 2k bits
   is exact. Two groups' sums apart, that the instructions need not wait on each other. */
__attribute__((target("avx2,avx512f,avx512bw,avx512vnni"))) static void
coarse_avx512_block(const uint8_t *block, const int8_t *query, Py_ssize_t rank, int32_t *scores) {
    const __m512i m0 = _mm512_set1_epi8(0x03), m1 = _mm512_set1_epi8(0x0C),
                  m2 = _mm512_set1_epi8(0x30), m3 = _mm512_set1_epi8((char)0xC0);
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
    __m512i t0 = s0, t1 = s0, t2 = s0, t3 = s0;
    const Py_ssize_t groups = rank / 16; /* a multiple of 4: rank is of 64 */
    for (Py_ssize_t g = 0; g < groups; g += 2) {
        const __m512i x = _mm512_loadu_si512(block + 64 * g);
        const __m512i y = _mm512_loadu_si512(block + 64 * g + 64);
        s0 = _mm512_dpbusd_epi32(s0, _mm512_and_si512(x, m0), _mm512_set1_epi32(weights_of(query, g, 0)));
        s1 = _mm512_dpbusd_epi32(s1, _mm512_and_si512(x, m1), _mm512_set1_epi32(weights_of(query, g, 1)));
        s2 = _mm512_dpbusd_epi32(s2, _mm512_and_si512(x, m2), _mm512_set1_epi32(weights_of(query, g, 2)));
        s3 = _mm512_dpbusd_epi32(s3, _mm512_and_si512(x, m3), _mm512_set1_epi32(weights_of(query, g, 3)));
        t0 = _mm512_dpbusd_epi32(t0, _mm512_and_si512(y, m0), _mm512_set1_epi32(weights_of(query, g + 1, 0)));
        t1 = _mm512_dpbusd_epi32(t1, _mm512_and_si512(y, m1), _mm512_set1_epi32(weights_of(query, g + 1, 1)));
        t2 = _mm512_dpbusd_epi32(t2, _mm512_and_si512(y, m2), _mm512_set1_epi32(weights_of(query, g + 1, 2)));
        t3 = _mm512_dpbusd_epi32(t3, _mm512_and_si512(y, m3), _mm512_set1_epi32(weights_of(query, g + 1, 3)));
    }
    __m512i sum = _mm512_add_epi32(s0, t0);
    sum = _mm512_add_epi32(sum, _mm512_srai_epi32(_mm512_add_epi32(s1, t1), 2));
    sum = _mm512_add_epi32(sum, _mm512_srai_epi32(_mm512_add_epi32(s2, t2), 4));
    sum = _mm512_add_epi32(sum, _mm512_srai_epi32(_mm512_add_epi32(s3, t3), 6));
    _mm512_storeu_si512(scores, sum);
}

/* AVX-512's part: as COARSE_SCAN, but a block's rows are compared with the floor at once */
__attribute__((target("avx2,avx512f,avx512bw,avx512vnni"))) static void coarse_avx512(Part *p) {
    const Py_ssize_t bytes = coarse_block(p->rank);
    int32_t scores[LANES];
    for (Py_ssize_t done = 0; done < p->rows; done += LANES) {
        const Py_ssize_t at = p->first + done;
        coarse_avx512_block(p->coarse + at / LANES * bytes, p->query, p->rank, scores);
        __mmask16 above = _mm512_cmpgt_epi32_mask(_mm512_loadu_si512(scores),
                                                  _mm512_set1_epi32(p->floor));
        if (p->rows - done < LANES) above &= (__mmask16)((1u << (p->rows - done)) - 1);
        while (above) { /* in the order of the rows; collect may raise the floor */
            const int r = __builtin_ctz(above);
            above &= (__mmask16)(above - 1);
            if (scores[r] > p->floor) collect(p, scores[r], at + r);
        }
    }
}
#endif

/* One block's 16 scores, by the part's loop. */
static void block_scores(const Part *p, const uint8_t *block, int32_t *scores) {
#ifdef HAVE_AVX2_SCAN
    if (p->loop == AVX512) {
        coarse_avx512_block(block, p->query, p->rank, scores);
        return;
    }
    if (p->loop == AVX2) {
        coarse_avx2_block(block, p->query, p->rank, scores);
        return;
    }
#endif
    coarse_plain_block(block, p->query, p->rank, scores);
}

/* The first stage's sample: one block in this many. It is read by the thread that made the
   query's vector, before the scan can be shared, so it lies on the search's path: one in 64
   rather than 32 took a hybrid Retrieve at 100k 0.045 ms less after the vector (a one-off A/B in
   one process, the variants taking turns, 6 runs of 100 questions: 0.019 to 0.074 ms less in
   each); at 100k rows it still holds 98 blocks (1,568 rows), and no development question's
   floor came out too high (497 questions, a counting build). */
#define SAMPLE_EVERY 64
#define SAMPLE_AHEAD 4  /* the sampled blocks asked for this many ahead of the one scored */

/* A floor for the first stage's pools from a sample of the blocks (one in SAMPLE_EVERY, spread
   over all of them): one below the score the sample's best rows reach where, at the sample's
   rate, twice `keep` rows of the whole would, so that every part takes about twice `keep` rows
   in all rather than several times as many, cut down over and over. INT32_MIN (no floor) where
   the sample is too small to say, or no memory. A floor too high is found afterwards and the
   rows scanned again without it (second_stage), so the answer never depends on it. */
static int32_t sampled_floor(const Part *whole) {
    const Py_ssize_t blocks = (whole->rows + LANES - 1) / LANES, bytes = coarse_block(whole->rank);
    const Py_ssize_t most = (blocks + SAMPLE_EVERY - 1) / SAMPLE_EVERY * LANES;
    Kept *sample = PyMem_RawMalloc((size_t)most * sizeof(Kept));
    if (sample == NULL) return INT32_MIN;
    Py_ssize_t sampled = 0;
    int32_t scores[LANES];
    for (Py_ssize_t b = 0; b < blocks; b += SAMPLE_EVERY) {
#if defined(__GNUC__) || defined(__clang__)
        /* the sampled blocks lie far apart, and after the model's run not in a cache: ask for
           one a few ahead (a 100k-row sample, cold: 0.13 ms to 0.10 ms) */
        const Py_ssize_t next = b + SAMPLE_AHEAD * SAMPLE_EVERY;
        if (next < blocks)
            for (Py_ssize_t line = 0; line < bytes; line += 64)
                __builtin_prefetch(whole->coarse + next * bytes + line);
#endif
        block_scores(whole, whole->coarse + b * bytes, scores);
        for (Py_ssize_t r = 0; r < LANES && b * LANES + r < whole->rows; r++) {
            Kept here = {scores[r], (int32_t)sampled};
            sample[sampled++] = here;
        }
    }
    const Py_ssize_t reach = (Py_ssize_t)(2 * (int64_t)whole->keep * sampled / whole->rows) + 8;
    int32_t floor = INT32_MIN;
    if (reach < sampled / 2) {
        select_best(sample, sampled, reach);
        floor = sample[0].score;
        for (Py_ssize_t i = 1; i < reach; i++)
            if (sample[i].score < floor) floor = sample[i].score;
        floor -= 1;
    }
    PyMem_RawFree(sample);
    return floor;
}

/* One row's sketch's dot product with the query, by the part's loop. */
static inline int32_t row_dot(const Part *p, const uint8_t *row) {
#ifdef HAVE_AVX2_SCAN
    if (p->loop == AVX512) return avx512_row(row, p->halves, p->rank / 2);
    if (p->loop == AVX2) return avx2_row(row, p->query, p->rank);
#endif
    return dot(row, p->query, p->rank);
}

static void *scan_part(void *arg);

/* Sorts `rows` (n of them) by row number into `into` (room for n; `rows` is scratch): a radix
   sort of three passes of 11 bits, which row numbers below 2^31 need at most. Returns where
   the sorted rows are (`rows` or `into`). */
static Kept *by_row(Kept *rows, Py_ssize_t n, Kept *into) {
    Py_ssize_t counts[1 << 11];
    int32_t most = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (rows[i].row > most) most = rows[i].row;
    for (int shift = 0; shift < 33 && (shift == 0 || (most >> shift) != 0); shift += 11) {
        memset(counts, 0, sizeof counts);
        for (Py_ssize_t i = 0; i < n; i++) counts[(rows[i].row >> shift) & 2047]++;
        Py_ssize_t at = 0;
        for (int b = 0; b < 2048; b++) {
            Py_ssize_t here = counts[b];
            counts[b] = at;
            at += here;
        }
        for (Py_ssize_t i = 0; i < n; i++) into[counts[(rows[i].row >> shift) & 2047]++] = rows[i];
        Kept *swap = rows;
        rows = into;
        into = swap;
    }
    return rows;
}

/* The second stage, in three steps (`second_stage` takes them one after the other; a
   SharedScan shares out the second among the threads that wait for its answer):
   `pooled_best` gathers the parts' pools and keeps their best `whole->keep`, in row order;
   `score_pooled` scores some of those from their sketches; `best_scored` puts the best
   `whole->count` of them into whole->heap, best first. */

/* The best `whole->keep` of the parts' pools (`shares` of them, side by side from `pool`, which
   they are gathered into), in the order of their rows: into `*best`, returning how many. */
static Py_ssize_t pooled_best(const Part *parts, int shares, Kept *pool, Part *whole,
                              Kept **best) {
    Py_ssize_t pooled = 0;
    for (int t = 0; t < shares; t++) {
        memmove(pool + pooled, parts[t].pool, (size_t)parts[t].pooled * sizeof(Kept));
        pooled += parts[t].pooled;
    }
    /* Every pooled row scores above the sampled floor (a part's floor only rises from it), so
       with `keep` of them pooled, no row it left out ranks among the best `keep`; with fewer,
       one may: every row again, without it (one thread: a sample so misleading is rare). */
    if (whole->floor != INT32_MIN && pooled < whole->keep) {
        Part again = *whole;
        again.pool = pool;
        again.pooled = 0;
        again.floor = INT32_MIN;
        scan_part(&again);
        pooled = again.pooled;
    }
    if (pooled > whole->keep) {
        select_best(pool, pooled, whole->keep);
        pooled = whole->keep;
    }
    /* in the order of the rows, so their sketches are read as they lie (the pools' room is
       at least twice `keep`: the second half is the sort's) */
    *best = by_row(pool, pooled, pool + whole->keep);
    return pooled;
}

/* Scores rows [from, to) of `pool` (of `pooled`) from their sketches. The rows lie apart: each
   asked for 32 rows ahead (on an AMD EPYC, 100k real e5 vectors, the second stage 0.86x of its
   time 16 ahead, 8 ahead 1.1x, 48 or 64 no faster than 32). */
static void score_pooled(const Part *whole, Kept *pool, Py_ssize_t pooled, Py_ssize_t from,
                         Py_ssize_t to) {
    const Py_ssize_t bytes = whole->rank / 2, ahead = 32;
    for (Py_ssize_t i = from; i < to; i++) {
        if (i + ahead < pooled) {
            const char *next = (const char *)whole->sketches + pool[i + ahead].row * bytes;
#if defined(__GNUC__) || defined(__clang__)
            for (Py_ssize_t line = 0; line < bytes; line += 64) __builtin_prefetch(next + line);
#else
            (void)next;
#endif
        }
        pool[i].score = row_dot(whole, whole->sketches + pool[i].row * bytes);
    }
}

/* The best `whole->count` of the `pooled` scored rows of `pool` into whole->heap, best first,
   by a selection rather than a heap: the rows come in the order they lie, not by score, so a
   heap would take a good share of them, each a few unforeseeable branches. Returns how many. */
static Py_ssize_t best_scored(Kept *pool, Py_ssize_t pooled, Part *whole) {
    whole->kept = pooled < whole->count ? pooled : whole->count;
    select_best(pool, pooled, whole->kept);
    memcpy(whole->heap, pool, (size_t)whole->kept * sizeof(Kept));
    qsort(whole->heap, (size_t)whole->kept, sizeof(Kept), best_first);
    return whole->kept;
}

/* The second stage on this thread alone: the best `whole->count` of the parts' pools by their
   sketches, into whole->heap. Returns how many. */
static Py_ssize_t second_stage(const Part *parts, int shares, Kept *pool, Part *whole) {
    Kept *best;
    const Py_ssize_t pooled = pooled_best(parts, shares, pool, whole, &best);
    score_pooled(whole, best, pooled, 0, pooled);
    return best_scored(best, pooled, whole);
}

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
    if (p->coarse != NULL) {
#ifdef HAVE_AVX2_SCAN
        if (p->loop == AVX512)
            coarse_avx512(p);
        else if (p->loop == AVX2)
            coarse_avx2(p);
        else
#endif
            coarse_plain(p);
        return NULL;
    }
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
   best count, ties to the lower row as a whole scan would); or, with the first stage, their
   pools (side by side in `pool`) go to the second. Returns how many lead `heap`. */
static Py_ssize_t scan(Part *whole, int threads) {
    Part parts[MOST_THREADS];
    Py_ssize_t share = whole->rows / threads / LANES * LANES; /* whole blocks of 2-bit codes */
    for (int t = 0; t < threads; t++) {
        parts[t] = *whole;
        parts[t].first = t * share;
        parts[t].rows = t == threads - 1 ? whole->rows - parts[t].first : share;
        parts[t].heap = whole->heap + t * whole->count;
        parts[t].pool = whole->coarse ? whole->pool + t * 2 * whole->keep : NULL;
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
    if (whole->coarse != NULL) return second_stage(parts, threads, whole->pool, whole);
    return merged(parts, threads, whole->heap, whole->count);
}

/* A C-contiguous view of `object` whose items are `size` bytes of one of `formats`; else a
   TypeError naming `what` and its `type` (numpy's own error for a strided array names no
   argument). */
static int view_of(PyObject *object, Py_buffer *view, const char *formats, Py_ssize_t size,
                   const char *what, const char *type) {
    if (PyObject_GetBuffer(object, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) == 0) {
        const char *format = view->format ? view->format : "B";
        if (*format == '@' || *format == '=' || *format == '<') format++;
        if (view->itemsize == size && strlen(format) == 1 && strchr(formats, *format)) return 0;
        PyBuffer_Release(view);
    } else if (PyErr_ExceptionMatches(PyExc_BufferError) ||
               PyErr_ExceptionMatches(PyExc_ValueError) ||
               PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
    } else {
        return -1;
    }
    PyErr_Format(PyExc_TypeError, "%s must be a contiguous buffer of %s", what, type);
    return -1;
}

PyDoc_STRVAR(best_rows_doc,
"best_rows(sketches, query, count, threads=1, loop=None, coarse=None, keep=0) -> bytes\n\n"
"The `count` rows of `sketches` (uint8, len(query) / 2 per row, C order: two 4-bit\n"
"coordinates a byte, as the module's text says) whose dot product with `query` (int8, a\n"
"multiple of 64 weights) is greatest, best first, ties to the lower row:\n"
"their numbers as int32 (native order), fewer when there are fewer rows. `threads` (1 to 16)\n"
"share the rows; a thread that cannot be started leaves its share to this one. `loop`: one of\n"
"loops() by name (the same answer from each; the tests compare them), None for the best.\n"
"`coarse`: the rows' 2-bit codes (uint8, coarse_block(len(query)) for each 16 rows, as the\n"
"module's text says); given, with a `keep` (0: none; taken to at least `count`) fewer than\n"
"the rows, only the `keep` rows best by them are ranked by their sketches (the first stage).");

/* Reads a scan's arguments into `whole` (its views held in `sketches` and `query`, AVX-512's
   weights allocated: `release_scan` gives them back), `count` at most every row; -1 with the
   error set (nothing held) when they cannot be scanned. */
static int open_scan(PyObject *sketches_arg, PyObject *query_arg, Py_ssize_t count,
                     const char *loop_name, PyObject *coarse_arg, Py_ssize_t keep,
                     Py_buffer *sketches, Py_buffer *query, Py_buffer *coarse, Part *whole) {
    coarse->obj = NULL;
    int loop = LOOPS;
    for (int l = 0; l < LOOPS; l++) {
        if (loop_name == NULL ? has_loop[l] : strcmp(loop_name, loop_names[l]) == 0) loop = l;
    }
    if (loop == LOOPS || !has_loop[loop]) {
        PyErr_Format(PyExc_ValueError, "no loop %s on this processor (see loops())",
                     loop_name ? loop_name : "");
        return -1;
    }
    if (count < 0 || keep < 0) {
        PyErr_SetString(PyExc_ValueError,
                        count < 0 ? "count must not be negative" : "keep must not be negative");
        return -1;
    }
    if (view_of(sketches_arg, sketches, "B", 1, "sketches", "uint8") < 0) return -1;
    if (view_of(query_arg, query, "b", 1, "query", "int8") < 0) {
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
    if (coarse_arg != NULL && coarse_arg != Py_None) {
        if (view_of(coarse_arg, coarse, "B", 1, "coarse", "uint8") < 0) {
            coarse->obj = NULL;
            goto refused;
        }
        const Py_ssize_t blocks = (rows + LANES - 1) / LANES;
        if (coarse->len != blocks * coarse_block(rank)) {
            PyErr_Format(PyExc_ValueError,
                         "coarse holds %zd bytes, not %zd blocks of %zd for the %zd rows",
                         coarse->len, blocks, coarse_block(rank), rows);
            goto refused;
        }
    }
    /* the first stage runs where it is given, with a `keep` (at least `count`) fewer than the
       rows */
    if (keep > 0 && keep < count) keep = count;
    const int staged = coarse->obj != NULL && count > 0 && keep > 0 && keep < rows;
    int8_t *halves = loop == AVX512 ? PyMem_RawMalloc((size_t)rank) : NULL;
    if (loop == AVX512 && halves == NULL) {
        PyErr_NoMemory();
        goto refused;
    }
    if (halves != NULL) paired_weights(query->buf, rank, halves);
    Part opened = {sketches->buf, query->buf, halves, 0, rows, rank, count > rows ? rows : count,
                   0, NULL, loop, staged ? coarse->buf : NULL, staged ? keep : 0, 0, INT32_MIN,
                   NULL};
    *whole = opened;
    return 0;
refused:
    if (coarse->obj != NULL) PyBuffer_Release(coarse);
    PyBuffer_Release(query);
    PyBuffer_Release(sketches);
    return -1;
}

static void release_scan(Py_buffer *sketches, Py_buffer *query, Py_buffer *coarse, Part *whole) {
    PyMem_RawFree((void *)whole->halves);
    whole->halves = NULL;
    if (coarse->obj != NULL) PyBuffer_Release(coarse);
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

static PyObject *best_rows(PyObject *module, PyObject *args, PyObject *kwargs) {
    PyObject *sketches_arg, *query_arg;
    Py_ssize_t count;
    PyObject *coarse_arg = NULL;
    Py_ssize_t keep = 0;
    int threads = 1;
    const char *loop_name = NULL;
    static char *names[] = {"sketches", "query", "count", "threads", "loop", "coarse", "keep",
                            NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOn|izOn:best_rows", names, &sketches_arg,
                                     &query_arg, &count, &threads, &loop_name, &coarse_arg, &keep))
        return NULL;
    if (threads < 1 || threads > MOST_THREADS) {
        PyErr_Format(PyExc_ValueError, "threads must be 1 to %d, got %d", MOST_THREADS, threads);
        return NULL;
    }
    Py_buffer sketches, query, coarse;
    Part whole;
    if (open_scan(sketches_arg, query_arg, count, loop_name, coarse_arg, keep, &sketches, &query,
                  &coarse, &whole) < 0)
        return NULL;
    PyObject *result = NULL;
    if (threads > whole.rows) threads = whole.rows > 0 ? (int)whole.rows : 1;
    whole.heap =
        PyMem_RawMalloc((size_t)threads * (size_t)(whole.count ? whole.count : 1) * sizeof(Kept));
    whole.pool = whole.coarse ? PyMem_RawMalloc((size_t)threads * (size_t)(2 * whole.keep) *
                                                sizeof(Kept))
                              : NULL;
    if (whole.heap == NULL || (whole.coarse && whole.pool == NULL)) {
        PyErr_NoMemory();
    } else {
        Py_ssize_t kept;
        Py_BEGIN_ALLOW_THREADS
        if (whole.coarse) whole.floor = sampled_floor(&whole);
        kept = scan(&whole, threads);
        Py_END_ALLOW_THREADS
        result = rows_of(whole.heap, kept);
    }
    PyMem_RawFree(whole.heap);
    PyMem_RawFree(whole.pool);
    release_scan(&sketches, &query, &coarse, &whole);
    return result;
}

/* --- a scan shared by the threads that take part in it ---------------------------------- */

#define SHARE_ROWS 16384 /* the rows a thread takes at a time */

/* --- after the scan: its answer made with the threads that wait for it ------------------ */

/* Once every row is scanned, one thread makes the answer: the second stage (the first stage's
   best rows scored from their sketches) and, asked by `nearest`, the exact cosines of the best
   of those. Both are loops over rows that lie apart in memory, each row independent of the
   others; a thread that waits for the answer meanwhile (`wait`: a hybrid search's model thread,
   its own reads done) takes rows of them too, a chunk at a time, rather than sleep. The thread
   making the answer publishes each loop (`after`), takes its rows as they come, and waits for
   the rows the others took before it goes on. A helper spins while it waits for the next loop
   (a sleeping thread takes tens of microseconds to wake on a virtual machine, as long as its
   share would take), for at most SPIN_MOST, and then leaves the rest to the thread making the
   answer: so a helper whose answer nobody makes still returns. On a 100k index the second stage
   scores 4,096 sketches and the exact re-scoring reads 400 rows of 1.5 kB, each about 0.15 ms
   on one thread after the model's run; shared so, a hybrid Retrieve there ended 0.1 ms sooner
   after the vector (benchmarks/README.md). */

typedef struct {
    Py_ssize_t rows, next, done; /* next and done: taken and added to atomically */
} Chunks;

enum { AFTER_SCAN, AFTER_SCORING, AFTER_SELECTING, AFTER_RESCORING, AFTER_ENDED };

#define SCORING_CHUNK 256  /* sketches a helper takes at a time */
#define RESCORING_CHUNK 16 /* candidates' float32 rows a helper takes at a time */
#define SPIN_MOST 2e-4     /* seconds a helper spins for the next loop before it leaves */

#if defined(HAVE_THREADS) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_HELPERS 1
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define TAKE(x, n) __atomic_fetch_add(&(x), (n), __ATOMIC_ACQ_REL)
#else /* no helpers: the thread making the answer takes every row itself */
#define LOAD(x) (x)
#define STORE(x, v) ((x) = (v))
#define TAKE(x, n) (((x) += (n)) - (n))
#endif

/* Takes the next `chunk` of `work`'s rows: [*first, *end); 0 when none is left. */
static inline int take_chunk(Chunks *work, Py_ssize_t chunk, Py_ssize_t *first,
                             Py_ssize_t *end) {
    *first = TAKE(work->next, chunk);
    if (*first >= work->rows) return 0;
    *end = *first + chunk < work->rows ? *first + chunk : work->rows;
    return 1;
}

#ifdef HAVE_HELPERS
/* One step of a spin: a pause, and every YIELD_EVERY steps the core given up, should another
   thread be waiting for it (on one core, the helper or the thread making the answer). */
#define YIELD_EVERY 256
static inline void relax(unsigned step) {
    if (step % YIELD_EVERY == YIELD_EVERY - 1) {
        sched_yield();
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

static double seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}
#endif

/* SharedScan: the scan of best_rows, its rows taken SHARE_ROWS at a time by every thread that
   calls share() (each into a heap of its own, at most MOST_THREADS of them) until none is
   left; best() takes part too, then waits for the others and answers as best_rows does. A
   thread joins when it has nothing better to do: a hybrid search's model thread starts the
   scan beside the keyword side, and the caller, done ranking words, joins it rather than wait
   (himga.memory.beside). The locks are Python's own, taken without the interpreter's lock. */
typedef struct {
    PyObject_HEAD
    Py_buffer sketches, query, coarse;
    Part whole;
    Part parts[MOST_THREADS];
    Kept *heaps;                             /* MOST_THREADS x count, each part's */
    Kept *pools;                             /* MOST_THREADS x 2 keep, with the first stage */
    Py_ssize_t next;                         /* the first row no thread has taken */
    int joined;                              /* how many threads took part */
    Py_ssize_t kept;                         /* how many rows the answer holds, once made */
    PyThread_type_lock claim;                /* guards next, joined, finishing and rescored */
    PyThread_type_lock running[MOST_THREADS]; /* held by each part while it scans */
    PyObject *best;                          /* the answer, once made */
    /* After the scan (below): the thread that makes the answer, the lock it holds meanwhile,
       and what it gives the threads waiting for it to help with. */
    int finishing, rescored;
    PyThread_type_lock answering;
    int after;                   /* AFTER_..., read and set atomically */
    Chunks scoring, rescoring;   /* the second stage's sketches, the candidates' exact cosines */
    Kept *scored;                /* the second stage's rows */
    const float *matrix, *unit;  /* the exact re-scoring's rows and query */
    Py_ssize_t dimension;
    const Kept *candidates;      /* the rows re-scored, and their cosines */
    float *cosines;
} SharedScan;

static void shared_dealloc(SharedScan *self) {
    for (int t = 0; t < MOST_THREADS; t++)
        if (self->running[t]) PyThread_free_lock(self->running[t]);
    if (self->claim) PyThread_free_lock(self->claim);
    if (self->answering) PyThread_free_lock(self->answering);
    PyMem_RawFree(self->heaps);
    PyMem_RawFree(self->pools);
    if (self->whole.sketches != NULL)
        release_scan(&self->sketches, &self->query, &self->coarse, &self->whole);
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

/* Scores the second stage's rows [first, end). */
static void score_chunk(SharedScan *self, Py_ssize_t first, Py_ssize_t end) {
    score_pooled(&self->whole, self->scored, self->scoring.rows, first, end);
}

/* The exact cosines of the candidates [first, end), each row asked for a few ahead. */
static void rescore_chunk(SharedScan *self, Py_ssize_t first, Py_ssize_t end) {
    const Py_ssize_t d = self->dimension, ahead = 8;
    const Kept *row = self->candidates;
    for (Py_ssize_t i = first; i < end && i < first + ahead; i++)
        ask_for_row(self->matrix + row[i].row * d, d);
    for (Py_ssize_t i = first; i < end; i++) {
        if (i + ahead < end) ask_for_row(self->matrix + row[i + ahead].row * d, d);
        self->cosines[i] = exact_dot(self->matrix + row[i].row * d, self->unit, d);
    }
}

/* Takes chunks of `work` and does them (`chunk_of`) until none is left: whether any was done. */
static int take_chunks(SharedScan *self, Chunks *work, Py_ssize_t chunk,
                       void (*chunk_of)(SharedScan *, Py_ssize_t, Py_ssize_t)) {
    Py_ssize_t first, end;
    int took = 0;
    while (take_chunk(work, chunk, &first, &end)) {
        chunk_of(self, first, end);
        TAKE(work->done, end - first);
        took = 1;
    }
    return took;
}

/* Publishes `work` of `rows` rows (the fields it reads set before), takes its chunks with the
   helpers, and waits for the chunks they took. */
static void shared_loop(SharedScan *self, Chunks *work, Py_ssize_t rows, int after,
                        Py_ssize_t chunk,
                        void (*chunk_of)(SharedScan *, Py_ssize_t, Py_ssize_t)) {
    work->rows = rows;
    work->next = work->done = 0;
    STORE(self->after, after);
    take_chunks(self, work, chunk, chunk_of);
    for (unsigned step = 0; LOAD(work->done) < rows; step++) { /* a chunk a helper took */
#ifdef HAVE_HELPERS
        relax(step);
#endif
    }
}

/* A helper's part: the loops published as they come, spinning at most SPIN_MOST for each
   (without the interpreter's lock). */
static void help_answer(SharedScan *self) {
#ifdef HAVE_HELPERS
    int seen = -1;
    double until = 0.0;
    for (unsigned spins = 0;; spins++) {
        const int after = LOAD(self->after);
        if (after == AFTER_ENDED) return;
        int took = 0;
        if (after == AFTER_SCORING)
            took = take_chunks(self, &self->scoring, SCORING_CHUNK, score_chunk);
        else if (after == AFTER_RESCORING)
            took = take_chunks(self, &self->rescoring, RESCORING_CHUNK, rescore_chunk);
        if (after != seen || took) { /* a loop published, or rows done: the wait begins anew */
            seen = after;
            until = seconds() + SPIN_MOST;
        } else if (spins % 64 == 0 && seconds() > until) {
            return;
        }
        relax(spins);
    }
#else
    (void)self;
#endif
}

/* The scan's answer made once, by the first thread to ask (without the interpreter's lock),
   its second stage's scoring shared with the helpers; `more`: an exact re-scoring follows (so
   the helpers wait for it). A thread asking while another makes it helps, then waits. */
static void make_answer(SharedScan *self, int parts, int more) {
    PyThread_acquire_lock(self->claim, WAIT_LOCK);
    const int mine = !self->finishing;
    self->finishing = 1;
    if (mine) PyThread_acquire_lock(self->answering, WAIT_LOCK);
    PyThread_release_lock(self->claim);
    if (!mine) {
        help_answer(self);
        PyThread_acquire_lock(self->answering, WAIT_LOCK); /* the answer made */
        PyThread_release_lock(self->answering);
        return;
    }
    if (self->whole.coarse) {
        Kept *rows;
        const Py_ssize_t pooled = pooled_best(self->parts, parts, self->pools, &self->whole, &rows);
        self->scored = rows;
        shared_loop(self, &self->scoring, pooled, AFTER_SCORING, SCORING_CHUNK, score_chunk);
        STORE(self->after, AFTER_SELECTING);
        self->kept = best_scored(rows, pooled, &self->whole);
    } else {
        self->kept = merged(self->parts, parts, self->heaps, self->whole.count);
    }
    if (!more) STORE(self->after, AFTER_ENDED);
    PyThread_release_lock(self->answering);
}

PyDoc_STRVAR(wait_doc,
"wait() -> None\n\n"
"Take part in the scan should rows be left, wait for every thread that took part, and help\n"
"make its answer should it be made soon (see the module's text): once it returns no part\n"
"reads the sketches any more, nor this thread the rows it re-scored. It cannot fail.");

static PyObject *shared_wait(SharedScan *self, PyObject *unused) {
    Py_BEGIN_ALLOW_THREADS
    every_part_ended(self);
    help_answer(self);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *shared_best(SharedScan *self, PyObject *unused) {
    if (self->best == NULL) {
        Py_BEGIN_ALLOW_THREADS
        make_answer(self, every_part_ended(self), 0);
        Py_END_ALLOW_THREADS
        if (self->best == NULL) self->best = rows_of(self->heaps, self->kept);
        if (self->best == NULL) return NULL;
    }
    Py_INCREF(self->best);
    return self->best;
}

PyDoc_STRVAR(nearest_doc,
"nearest(matrix, keys, unit, k) -> tuple[bytearray, bytearray]\n\n"
"best() re-scored: the best `k` of its rows by their exact cosine with `unit` (float32, d\n"
"values), read from `matrix` (float32, C order, d a row: the vectors the sketches were made\n"
"of, one a row), best first, ties to the lower key (`keys`: int64, one a row of the matrix):\n"
"their keys as int64 and their cosines as float32, native order, as\n"
"himga.memory._exact.best_of(matrix, keys, best(), unit, k) answers (the same dot products,\n"
"_exact.h), the threads that wait for the scan taking rows of it too.");

static PyObject *shared_nearest(SharedScan *self, PyObject *args) {
    PyObject *matrix_arg, *keys_arg, *unit_arg;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "OOOn:nearest", &matrix_arg, &keys_arg, &unit_arg, &k))
        return NULL;
    if (k < 0) {
        PyErr_SetString(PyExc_ValueError, "k must not be negative");
        return NULL;
    }
    Py_buffer matrix, keys, unit;
    if (view_of(matrix_arg, &matrix, "f", 4, "matrix", "float32") < 0) return NULL;
    if (view_of(unit_arg, &unit, "f", 4, "unit", "float32") < 0) {
        PyBuffer_Release(&matrix);
        return NULL;
    }
    /* int64 is 'l' or 'q' by the platform; both name an 8-byte integer here */
    if (view_of(keys_arg, &keys, "lq", 8, "keys", "int64") < 0) {
        PyBuffer_Release(&unit);
        PyBuffer_Release(&matrix);
        return NULL;
    }
    PyObject *result = NULL;
    Scored *found = NULL;
    const Py_ssize_t d = unit.len / 4;
    if (d < 1 || matrix.len % unit.len != 0) {
        PyErr_Format(PyExc_ValueError, "matrix holds %zd bytes, not whole rows of %zd floats",
                     matrix.len, d);
        goto done;
    }
    Py_ssize_t stored = matrix.len / unit.len;
    if (keys.len / 8 < stored) stored = keys.len / 8;
    if (stored < self->whole.rows) {
        PyErr_Format(PyExc_ValueError, "matrix and keys hold %zd rows, not the scan's %zd",
                     stored, self->whole.rows);
        goto done;
    }
    Py_ssize_t kept = 0, taken = 0;
    int no_memory = 0;
    Py_BEGIN_ALLOW_THREADS
    make_answer(self, every_part_ended(self), 1);
    kept = self->kept;
    float *cosines = PyMem_RawMalloc((size_t)(kept ? kept : 1) * sizeof(float));
    found = PyMem_RawMalloc((size_t)(kept ? kept : 1) * sizeof(Scored));
    PyThread_acquire_lock(self->claim, WAIT_LOCK);
    const int publish = !self->rescored && cosines != NULL && found != NULL;
    self->rescored = self->rescored || publish;
    PyThread_release_lock(self->claim);
    if (cosines == NULL || found == NULL) {
        no_memory = 1;
    } else if (publish) { /* the first to ask re-scores with the helpers */
        self->matrix = matrix.buf;
        self->unit = unit.buf;
        self->dimension = d;
        self->candidates = self->heaps;
        self->cosines = cosines;
        shared_loop(self, &self->rescoring, kept, AFTER_RESCORING, RESCORING_CHUNK,
                    rescore_chunk);
    } else { /* asked again: alone (the helpers have left) */
        const float *rows = matrix.buf;
        for (Py_ssize_t i = 0; i < kept; i++)
            cosines[i] = exact_dot(rows + self->heaps[i].row * d, unit.buf, d);
    }
    if (publish || no_memory) STORE(self->after, AFTER_ENDED);
    if (!no_memory) {
        const int64_t *key = keys.buf;
        for (Py_ssize_t i = 0; i < kept; i++) {
            Scored here = {cosines[i], key[self->heaps[i].row]};
            found[i] = here;
        }
        taken = best_scored_first(found, kept, k);
    }
    PyMem_RawFree(cosines);
    Py_END_ALLOW_THREADS
    if (no_memory) {
        PyErr_NoMemory();
        goto done;
    }
    result = scored_answer(found, taken);
done:
    PyMem_RawFree(found);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&unit);
    PyBuffer_Release(&matrix);
    return result;
}

static PyMethodDef shared_methods[] = {
    {"share", (PyCFunction)shared_share, METH_NOARGS, share_doc},
    {"best", (PyCFunction)shared_best, METH_NOARGS, best_doc},
    {"wait", (PyCFunction)shared_wait, METH_NOARGS, wait_doc},
    {"nearest", (PyCFunction)shared_nearest, METH_VARARGS, nearest_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(shared_doc,
"SharedScan(sketches, query, count, loop=None, coarse=None, keep=0)\n\n"
"best_rows's scan, shared by the threads that call share() and best() on it (see the\n"
"module's text): the same arguments and the same answer, from best().");

static PyObject *shared_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *sketches_arg, *query_arg, *coarse_arg = NULL;
    Py_ssize_t count, keep = 0;
    const char *loop_name = NULL;
    static char *names[] = {"sketches", "query", "count", "loop", "coarse", "keep", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOn|zOn:SharedScan", names, &sketches_arg,
                                     &query_arg, &count, &loop_name, &coarse_arg, &keep))
        return NULL;
    SharedScan *self = (SharedScan *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    if (open_scan(sketches_arg, query_arg, count, loop_name, coarse_arg, keep, &self->sketches,
                  &self->query, &self->coarse, &self->whole) < 0) {
        self->whole.sketches = NULL;
        Py_DECREF(self);
        return NULL;
    }
    Py_ssize_t room = self->whole.count ? self->whole.count : 1;
    self->heaps = PyMem_RawMalloc((size_t)MOST_THREADS * (size_t)room * sizeof(Kept));
    self->whole.heap = self->heaps; /* the second stage's answer */
    Py_ssize_t pool = 2 * self->whole.keep;
    if (self->whole.coarse) {
        self->pools = PyMem_RawMalloc((size_t)MOST_THREADS * (size_t)pool * sizeof(Kept));
        Py_BEGIN_ALLOW_THREADS
        self->whole.floor = sampled_floor(&self->whole); /* before any part copies it */
        Py_END_ALLOW_THREADS
    }
    self->claim = PyThread_allocate_lock();
    self->answering = PyThread_allocate_lock();
    int locks = self->claim != NULL && self->answering != NULL;
    for (int t = 0; t < MOST_THREADS; t++) {
        self->running[t] = PyThread_allocate_lock();
        locks = locks && self->running[t] != NULL;
        self->parts[t] = self->whole;
        self->parts[t].heap = self->heaps ? self->heaps + t * room : NULL;
        self->parts[t].pool = self->pools ? self->pools + t * pool : NULL;
    }
    if (self->heaps == NULL || (self->whole.coarse && self->pools == NULL) || !locks) {
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

PyDoc_STRVAR(coarse_block_doc,
"coarse_block(rank) -> int\n\n"
"The bytes of a block of 16 rows' 2-bit codes for a query of `rank` weights (best_rows's\n"
"`coarse`, whose layout the module's text gives).");

static PyObject *coarse_block_py(PyObject *module, PyObject *rank_arg) {
    Py_ssize_t rank = PyLong_AsSsize_t(rank_arg);
    if (rank == -1 && PyErr_Occurred()) return NULL;
    if (rank < 1 || rank > MOST_RANK || rank % BLOCK != 0)
        return PyErr_Format(PyExc_ValueError, "rank must be a multiple of %d up to %d, got %zd",
                            BLOCK, MOST_RANK, rank);
    return PyLong_FromSsize_t(coarse_block(rank));
}

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

/* --- a query's weights ------------------------------------------------------------------ */

PyDoc_STRVAR(weights_doc,
"weights(axes, query) -> bytes\n\n"
"A query's int8 weights (himga.memory.sketch.Sketch.weights): the dot product of `query`\n"
"(float32, d values) with each row of `axes` (float32, n x d, C order: each axis already\n"
"times its scale), all of them scaled so that the greatest in magnitude is 127 and rounded\n"
"to the nearest integer, half to even; n zeroes when every product is 0.");

/* The products and the rounding in one call rather than numpy's five: it runs on the thread
   that made the query's vector, before the scan can begin, after the model's run has emptied
   the caches (a hybrid Retrieve at 100k 0.031 ms sooner after the vector, a one-off A/B in one
   process, less in each of 6 runs). The weights were the same as numpy's for each of 200
   development questions; in general a product's last bit may differ from BLAS's, which at
   most moves a weight by one. The interpreter's lock is kept: a few microseconds. */
static PyObject *weights_py(PyObject *module, PyObject *args) {
    PyObject *axes_arg, *query_arg;
    Py_buffer axes, query;
    if (!PyArg_ParseTuple(args, "OO:weights", &axes_arg, &query_arg)) return NULL;
    if (view_of(axes_arg, &axes, "f", 4, "axes", "float32") < 0) return NULL;
    if (view_of(query_arg, &query, "f", 4, "query", "float32") < 0) {
        PyBuffer_Release(&axes);
        return NULL;
    }
    PyObject *result = NULL;
    float *weighed = NULL;
    const Py_ssize_t size = (Py_ssize_t)sizeof(float), d = query.len / size;
    if (d < 1 || query.len % size != 0 || axes.len % (d * size) != 0) {
        PyErr_Format(PyExc_ValueError,
                     "axes hold %zd bytes, not whole rows of the query's %zd float32 values",
                     axes.len, d);
        goto done;
    }
    const Py_ssize_t n = axes.len / (d * size);
    weighed = PyMem_RawMalloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (weighed == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, n);
    if (result == NULL) goto done;
    const float *axis = axes.buf, *q = query.buf;
    float top = 0.0f;
    for (Py_ssize_t i = 0; i < n; i++, axis += d) {
        float lane[16] = {0};
        Py_ssize_t j = 0;
        for (; j + 16 <= d; j += 16)
            for (int l = 0; l < 16; l++) lane[l] += axis[j + l] * q[j + l];
        float sum = 0.0f;
        for (int l = 0; l < 16; l++) sum += lane[l];
        for (; j < d; j++) sum += axis[j] * q[j];
        weighed[i] = sum;
        if (fabsf(sum) > top) top = fabsf(sum);
    }
    /* as numpy scales a float32 array by a Python float: the factor taken to float32 first */
    const float factor = top > 0.0f ? (float)(127.0 / (double)top) : 0.0f;
    int8_t *out = (int8_t *)PyBytes_AS_STRING(result);
    for (Py_ssize_t i = 0; i < n; i++) {
        const float w = nearbyintf(weighed[i] * factor); /* half to even, as numpy's rint */
        out[i] = (int8_t)(w > 127.0f ? 127 : w < -127.0f ? -127 : (int)w);
    }
done:
    PyMem_RawFree(weighed);
    PyBuffer_Release(&axes);
    PyBuffer_Release(&query);
    return result;
}

static PyMethodDef methods[] = {
    {"weights", weights_py, METH_VARARGS, weights_doc},
    {"best_rows", (PyCFunction)(void (*)(void))best_rows, METH_VARARGS | METH_KEYWORDS,
     best_rows_doc},
    {"coarse_block", coarse_block_py, METH_O, coarse_block_doc},
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
    if (PyModule_AddIntConstant(created, "LANES", LANES) < 0) {
        Py_DECREF(created);
        return NULL;
    }
    Py_INCREF(&SharedScanType);
    if (PyModule_AddObject(created, "SharedScan", (PyObject *)&SharedScanType) < 0) {
        Py_DECREF(&SharedScanType);
        Py_DECREF(created);
        return NULL;
    }
    return created;
}
