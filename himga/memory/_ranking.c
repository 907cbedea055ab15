/* himga.memory._ranking: the heavy part of himga.memory.ranking.rank, in C.

   It computes exactly what ranking.py's docstring defines (BM25 over each turn and, at a lower
   weight, its neighbours in the same session; Lucene's idf; a boost for the turns of a named
   speaker) in the same order of floating-point operations as the Python it replaced, so scores
   are bit for bit those of that code. The interpreter's lock is released while it runs, so
   other threads (other calls of a server) go on meanwhile.

   Per call, for each query term: its reach, the turns whose window holds it and the term's
   weighted count in each, is made from its postings (the number of each turn holding it, once
   per occurrence, ascending); its size gives the term's idf, and each turn reached has the
   term's share of its score added into `scores`, a dense array over all turns. The best
   `limit` of the turns with a score are then kept in a bounded heap; a filter (checks of columns
   against masks, a time range) drops turns just before the heap, so the statistics stay those
   of every turn and the limit is filled from the turns it keeps. Turn numbers may have holes
   (deleted turns): the arrays cover every number, `turns` counts the stored turns only.

   A reach is made in one of two ways, with the same result to the bit. In a store of at least
   IN_ORDER_FROM turn numbers, where each window's turns are numbered one after another (a
   session stored in one go, or alone), the windows are walked in turn order and the counts
   gathered in a small buffer of the turns still open, which leaves the reach in turn order,
   written one entry after another. From the first posting whose window is not (sessions stored
   interleaved), and in smaller stores from the first, the postings' windows are spread over a
   dense array of counts, as the core did before it walked them in order, and a turn reached
   both ways has its count moved over, so each turn's count is still summed in the order of the
   postings; that array is made the first time a call needs it.
   Ranking is bound by memory, not arithmetic: at a million turns nearly every turn reached
   misses the cache, so the loops ask AHEAD entries early for the memory they will touch (at 1M
   messages this halved the time of a call; `make bench-keyword-1m`), and walking the windows in
   order rather than spreading them over dense counts took 0.74x to 0.75x of the time there
   (0.93x to 0.98x where every session is stored interleaved; benchmarks/README.md).
   Walking in order, a call reads a turn's neighbours, window length and speaker from its cell
   (CELL_*: 4 bytes a turn, kept by himga.memory.windows through cells() below) rather than from
   four columns of 4 bytes each, so it brings a quarter of the memory in: at a million turns a
   call took 0.71x to 0.72x of the time it took reading the columns, 0.83x to 0.85x at 200k,
   the same answers (benchmarks/README.md); below IN_ORDER_FROM, where the columns stay in the
   cache, unpacking the cells cost more than it saved (1.05x to 1.08x at 100k), so the columns
   are read there, by a copy of the ranking made without the cells' tests (run_with).
   The dense arrays are reused from call to call (a free list guarded by the interpreter's lock),
   so a call touches only the turns it reaches, however many turns are stored. They cost 12 bytes
   a stored turn (and a quarter more, for growth; 12 more below IN_ORDER_FROM turn numbers or
   where sessions interleave) for each search running at once, with 12 bytes for each turn the
   longest reach holds from IN_ORDER_FROM turn numbers on, and stay allocated for the next. On
   Linux the scores of 2 MB and more are rounded up to whole huge pages and resident in full as
   the scratch is made (with small pages they would become resident as calls reach them, at a
   million turns within the first few calls). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define MAX_NEAR_TURNS 64
/* The turns still open while a term's windows are walked in order, a ring: a power of two (so
   its index may wrap) of at least 2 * MAX_NEAR_TURNS + 1. Moving the open counts down an array
   after each window, by memmove, took 5% to 9% of a call at a million turns
   (benchmarks/README.md). */
#define OPEN_RING 256u
/* How many entries ahead the loops over turns ask for the memory they will touch: at a million
   turns each turn reached is a cache miss, and the loops would otherwise wait for each in turn.
   A hint only; it changes no result. */
#define AHEAD 32
/* Into the nearest cache (locality 3): with locality 1 (the L2 on x86) a call at 1M turns took
   1.09x to 1.11x as long, 1.07x at 100k (benchmarks/README.md). */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch((address), 1, 3)
#else
#define PREFETCH(address) ((void)0)
#endif
/* For the parts made twice, with cells and without, so neither pays for the other's tests. */
#if defined(__GNUC__) || defined(__clang__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* From how many turn numbers on a term's windows are walked in turn order where they can be:
   below, the dense counts stay in the cache and spreading over them is quicker (on CI's 2-core
   machine the two crossed between 100k and 200k turns; benchmarks/README.md). */
#define IN_ORDER_FROM 131072
static Py_ssize_t in_order_from = IN_ORDER_FROM;  /* guarded by the GIL; tests set it */

/* The length norm of windows up to NORMS terms long is computed once a call, not once a turn
   reached (by the same expression, so to the same bits). */
#define NORMS 256

/* A turn's cell (cells()): bits 0-1 how many turns before it in its session its window holds,
   bits 2-3 how many after (so near_turns of at most CELL_MOST_NEAR), bit 4 whether those are
   numbered one after another (the window is turn - before .. turn + after), bits 5-15 its window
   length, bits 16-31 its speaker's number; a length or speaker too large for its bits (or no
   speaker) is CELL_LENGTH_ESCAPE / CELL_SPEAKER_ESCAPE, read from its column instead. */
#define CELL_MOST_NEAR 3
#define CELL_IN_ORDER 16u
#define CELL_LENGTH_SHIFT 5
#define CELL_LENGTH_ESCAPE 2047u
#define CELL_SPEAKER_SHIFT 16
#define CELL_SPEAKER_ESCAPE 65535u

/* What a call works in, kept for the next. `scores` and `scored` are made with the scratch;
   `counts` and `reached` the first time a window's turns are not numbered one after another. */
typedef struct Scratch {
    struct Scratch *next;
    Py_ssize_t size;     /* the turn numbers the dense arrays cover */
    double *scores;      /* a turn's score so far, one a turn number; zero between calls */
    int32_t *scored;     /* the turns with a score */
    double *counts;      /* the current term's weighted count in a turn's window; or NULL */
    int32_t *reached;    /* the turns whose window holds the current term; or NULL */
    int32_t *reach;      /* the current term's reach: the turns, */
    double *reach_counts; /* and the term's weighted count in each */
    Py_ssize_t reach_room;
} Scratch;

static Scratch *free_scratch = NULL; /* guarded by the GIL */

static void scratch_free(Scratch *s) {
    if (s == NULL) return;
    free(s->scores);
    free(s->scored);
    free(s->counts);
    free(s->reached);
    free(s->reach);
    free(s->reach_counts);
    free(s);
}

/* From how many bytes on the dense scores ask for huge pages (the size of one on x86-64 Linux,
   and on arm64 with pages of 4 KB). A call at a million turns touches its scores at random,
   each in a page of its own, and with pages of 4 KB most touches missed the TLB as well as the
   cache: huge pages took 0.91x of a call's time there (benchmarks/README.md). */
#define HUGE_PAGE ((size_t)2 << 20)

/* `bytes` of zeroes for a dense array; NULL when out of memory. From HUGE_PAGE on, where the
   system has huge pages, aligned to one and asked to be backed by them (a hint the system may
   refuse: the array then stays in small pages, the same to every result). */
static void *dense_zeroed(size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= HUGE_PAGE && bytes <= SIZE_MAX - (HUGE_PAGE - 1)) {
        bytes = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        void *memory = NULL;
        if (posix_memalign(&memory, HUGE_PAGE, bytes) != 0) return NULL;
        (void)madvise(memory, bytes, MADV_HUGEPAGE);
        memset(memory, 0, bytes);
        return memory;
    }
#endif
    return calloc(bytes, 1);
}

/* A scratch of at least `size` turns, zeroed; NULL when out of memory. Call with the GIL. */
static Scratch *scratch_take(Py_ssize_t size) {
    Scratch *s = free_scratch;
    if (s != NULL && s->size >= size) {
        free_scratch = s->next;
        return s;
    }
    if (s != NULL) {  /* too small: the store has grown; let it go */
        free_scratch = s->next;
        scratch_free(s);
    }
    Py_ssize_t room = size < 1024 ? 1024 : size + size / 4;
    if ((size_t)room > SIZE_MAX / sizeof(double)) return NULL;  /* its arrays' bytes overflow */
    s = calloc(1, sizeof(Scratch));
    if (s == NULL) return NULL;
    s->size = room;
    s->scores = dense_zeroed((size_t)room * sizeof(double));
    s->scored = malloc((size_t)room * sizeof(int32_t));
    if (!s->scores || !s->scored) {
        scratch_free(s);
        return NULL;
    }
    return s;
}

static void scratch_give(Scratch *s) {
    s->next = free_scratch;
    free_scratch = s;
}

/* Room in the scratch for a reach of `most` entries; -1 when out of memory. Without the GIL. */
static int reach_room(Scratch *s, Py_ssize_t most) {
    if (most <= s->reach_room) return 0;
    free(s->reach);
    free(s->reach_counts);
    s->reach_room = 0;
    s->reach = malloc((size_t)most * sizeof(int32_t));
    s->reach_counts = malloc((size_t)most * sizeof(double));
    if (s->reach == NULL || s->reach_counts == NULL) return -1;
    s->reach_room = most;
    return 0;
}

/* The dense counts of the general way, zeroed; -1 when out of memory. Without the GIL. */
static int counts_made(Scratch *s) {
    if (s->counts != NULL) return 0;
    s->counts = calloc((size_t)s->size, sizeof(double));
    s->reached = malloc((size_t)s->size * sizeof(int32_t));
    return s->counts != NULL && s->reached != NULL ? 0 : -1;
}

typedef struct {
    double score;
    int32_t turn;
} Hit;

/* Whether hit a ranks before hit b: higher score, then the earlier turn. */
static inline int ranks_before(const Hit *a, const Hit *b) {
    return a->score > b->score || (a->score == b->score && a->turn < b->turn);
}

/* The heap keeps its worst hit at the root. */
static void sift_down(Hit *heap, Py_ssize_t size, Py_ssize_t at) {
    for (;;) {
        Py_ssize_t worst = at, left = 2 * at + 1, right = left + 1;
        if (left < size && ranks_before(&heap[worst], &heap[left])) worst = left;
        if (right < size && ranks_before(&heap[worst], &heap[right])) worst = right;
        if (worst == at) return;
        Hit swap = heap[at];
        heap[at] = heap[worst];
        heap[worst] = swap;
        at = worst;
    }
}

static void sift_up(Hit *heap, Py_ssize_t at) {
    while (at > 0) {
        Py_ssize_t parent = (at - 1) / 2;
        if (!ranks_before(&heap[parent], &heap[at])) return;
        Hit swap = heap[at];
        heap[at] = heap[parent];
        heap[parent] = swap;
        at = parent;
    }
}

static int compare_hits(const void *a, const void *b) {
    const Hit *x = a, *y = b;
    if (ranks_before(x, y)) return -1;
    if (ranks_before(y, x)) return 1;
    return 0;
}

typedef struct {
    /* inputs */
    Py_ssize_t terms;
    const int32_t **postings;
    const Py_ssize_t *posting_sizes;
    const int32_t *before, *after, *window_lengths, *speakers;
    const unsigned char *named;
    Py_ssize_t named_size;
    Py_ssize_t turns;    /* how many turns are stored: N of the idf, and of the mean length */
    Py_ssize_t size;     /* how many turn numbers the arrays cover (holes hold no turn) */
    long long total_length;
    int near_turns;
    double own_weight, near_weight, k1, b, speaker_boost;
    Py_ssize_t limit;
    /* a filter: a turn is kept when, for each check, its value in the column is a non-zero
       byte of the mask, and (when timed) its time is in [low, high) */
    Py_ssize_t n_checks;
    const int32_t **check_columns;
    const unsigned char **check_masks;
    const Py_ssize_t *check_sizes;
    const Py_ssize_t *column_sizes;  /* a turn past a column's end is not kept */
    int timed;
    const int64_t *times;
    Py_ssize_t times_size;
    long long low, high;
    int in_order;        /* whether to walk windows in turn order where they can be */
    const uint32_t *cells; /* each turn's cell, when walking in order (else NULL) */
    /* outputs */
    Hit *best;
    Py_ssize_t found;
    const char *error;
} Call;

/* Whether `turn` is a turn number or -1 (none): the one check on each link followed. */
static inline int bad_link(int32_t turn, Py_ssize_t size) {
    return (uint32_t)(turn + 1) > (uint32_t)size;
}

/* Whether the filter keeps `turn` (every turn, without one). */
static inline int kept_by_filter(const Call *c, int32_t turn) {
    for (Py_ssize_t k = 0; k < c->n_checks; k++) {
        if (turn >= c->column_sizes[k]) return 0;
        int32_t value = c->check_columns[k][turn];
        if (value < 0 || value >= c->check_sizes[k] || !c->check_masks[k][value]) return 0;
    }
    if (c->timed) {
        if (turn >= c->times_size) return 0;
        int64_t time = c->times[turn];
        if (!(c->low <= time && time < c->high)) return 0;
    }
    return 1;
}

/* How making a term's reach can fail. */
enum {
    BAD_POSTING = -1,
    BAD_LINK = -2,
    NO_MEMORY = -3,
};

/* The turns in the window of `turn`, its session's neighbours up to near_turns each side:
   `back` of them before it, from `back_turns[back - 1]` (the farthest) on, and `ahead` after it
   from `ahead_turns[0]` (the nearest) on. Ahead is not walked when `near` is zero (the
   neighbours get nothing). Returns BAD_LINK on a link to no stored turn, else 0. */
static inline int window(const Call *c, int32_t turn, double near, int32_t *back_turns, int *back,
                         int32_t *ahead_turns, int *ahead) {
    int32_t other = turn;
    *back = 0;
    while (*back < c->near_turns) {
        other = c->before[other];
        if (bad_link(other, c->size)) return BAD_LINK;
        if (other < 0) break;
        back_turns[(*back)++] = other;
    }
    other = turn;
    *ahead = 0;
    while (*ahead < c->near_turns) {
        other = c->after[other];
        if (bad_link(other, c->size)) return BAD_LINK;
        if (other < 0 || near == 0.0) break;
        ahead_turns[(*ahead)++] = other;
    }
    if (near == 0.0) *back = 0;
    return 0;
}

/* How many times the posting at `i` lists its turn (the term's count in that turn); asks early
   for the links of the turn AHEAD postings on (unless `links` is 0: its cell is read instead),
   and for its entry in `dense` (unless NULL). */
static ALWAYS_INLINE Py_ssize_t posting_run(const Call *c, const int32_t *posting,
                                            Py_ssize_t size, Py_ssize_t i, int links,
                                            const double *dense) {
    if (i + AHEAD < size) {
        int32_t soon = posting[i + AHEAD];
        if ((uint32_t)soon < (uint32_t)c->size && links) {
            PREFETCH(&c->before[soon]);
            PREFETCH(&c->after[soon]);
            if (dense != NULL) PREFETCH(&dense[soon]);
        }
    }
    Py_ssize_t count = 1;
    while (i + count < size && posting[i + count] == posting[i]) count++;
    return count;
}

/* A term's reach, in turn order, while each window's turns are numbered one after another:
   the windows are walked in turn order and each turn's count summed in a small buffer of the
   turns still open, in the order of the postings (the order the definition sums them in); a
   turn before the first of the current window can be reached by no later posting, so it is
   written out. Stops at the first posting whose window's turns are not numbered one after
   another, with every open turn written out: `*stop` is where (`size` when none). Returns how
   many turns it wrote, or BAD_POSTING, BAD_LINK. */
static ALWAYS_INLINE Py_ssize_t reach_in_order(const Call *c, const int32_t *posting,
                                               Py_ssize_t size, int32_t *turns, double *counts,
                                               Py_ssize_t *stop, const uint32_t *cells) {
    Py_BUILD_ASSERT((OPEN_RING & (OPEN_RING - 1)) == 0 && OPEN_RING >= 2 * MAX_NEAR_TURNS + 1);
    double open[OPEN_RING];
    int32_t back_turns[MAX_NEAR_TURNS], ahead_turns[MAX_NEAR_TURNS];
    int64_t low = 0;  /* OPEN(k) is the count of turn low + k, for k below held */
    unsigned first_open = 0;
#define OPEN(k) open[(first_open + (unsigned)(k)) % OPEN_RING]
    int held = 0;
    Py_ssize_t n = 0, i = 0;
    while (i < size) {
        int32_t turn = posting[i];
        Py_ssize_t count = posting_run(c, posting, size, i, cells == NULL, NULL);
        if (turn < 0 || (Py_ssize_t)turn >= c->size) return BAD_POSTING;
        double near = (double)count * c->near_weight, own = (double)count * c->own_weight;
        int back = 0, ahead = 0;
        if (cells != NULL) {
            if (i + AHEAD < size) {
                int32_t soon = posting[i + AHEAD];
                if ((uint32_t)soon < (uint32_t)c->size) PREFETCH(&cells[soon]);
            }
            uint32_t cell = cells[turn];
            if (near != 0.0) {  /* else the neighbours get nothing: the window is the turn */
                if (!(cell & CELL_IN_ORDER)) break;
                back = (int)(cell & 3u);
                ahead = (int)((cell >> 2) & 3u);
                /* a cell is trusted for the window's shape, never for memory */
                if (turn < back || (Py_ssize_t)turn + ahead >= c->size) return BAD_LINK;
            }
            if ((int64_t)turn - back < low) break;
        } else {
            if (window(c, turn, near, back_turns, &back, ahead_turns, &ahead) < 0) return BAD_LINK;
            int in_order = (int64_t)turn - back >= low;  /* always, when windows are in order */
            for (int k = 0; k < back; k++) in_order &= back_turns[k] == turn - 1 - k;
            for (int k = 0; k < ahead; k++) in_order &= ahead_turns[k] == turn + 1 + k;
            if (!in_order) break;
        }
        i += count;
        int64_t first = (int64_t)turn - back;
        int done = first - low < held ? (int)(first - low) : held;
        for (int k = 0; k < done; k++) {
            turns[n] = (int32_t)(low + k);
            counts[n++] = OPEN(k);
        }
        first_open += (unsigned)done;
        held -= done;
        low = first;  /* the open turns now start at the window's first */
        int width = back + 1 + ahead;
        for (int k = held; k < width; k++) OPEN(k) = 0.0;
        if (width > held) held = width;
        for (int k = 0; k < back; k++) OPEN(k) = OPEN(k) + near;
        OPEN(back) = OPEN(back) + own;
        for (int k = back + 1; k < width; k++) OPEN(k) = OPEN(k) + near;
    }
    for (int k = 0; k < held; k++) {
        turns[n] = (int32_t)(low + k);
        counts[n++] = OPEN(k);
    }
#undef OPEN
    *stop = i;
    return n;
}

/* Where `turn` is in the ascending `turns[0..n)`, or -1. */
static Py_ssize_t find_turn(const int32_t *turns, Py_ssize_t n, int32_t turn) {
    Py_ssize_t low = 0, high = n;
    while (low < high) {
        Py_ssize_t middle = low + (high - low) / 2;
        if (turns[middle] < turn) low = middle + 1;
        else high = middle;
    }
    return low < n && turns[low] == turn ? low : -1;
}

/* The rest of a term's reach, as reach_rest makes it. */
typedef struct {
    double *counts;            /* dense, one a turn number */
    int32_t *reached;          /* the turns it reached, in the order first reached */
    Py_ssize_t n_reached;
    const int32_t *in_order;   /* the part in order: its turns, ascending, */
    double *in_order_counts;   /* and their counts */
    Py_ssize_t n_in_order;
    int32_t last_in_order;     /* its last turn, -1 when empty */
} Rest;

/* Adds `add` to the count of turn `at`; first reached, it is listed, and a count the part in
   order holds for it is moved over (and set to zero there: read as not reached). */
static inline void add_count(Rest *rest, int32_t at, double add) {
    double *counts = rest->counts;
    if (counts[at] == 0.0) {
        rest->reached[rest->n_reached++] = at;
        Py_ssize_t held = at <= rest->last_in_order
                              ? find_turn(rest->in_order, rest->n_in_order, at) : -1;
        if (held >= 0) {
            counts[at] = rest->in_order_counts[held];
            rest->in_order_counts[held] = 0.0;
        }
    }
    counts[at] = counts[at] + add;
}

/* The rest of a term's reach, from posting `from` on, in general: the windows spread over the
   scratch's dense counts, each turn's count summed in the order of the postings. A turn the
   part in order (`in_order[0..n)`, ascending) already holds has its count moved over when first
   reached here, and its count there set to zero (read as not reached). The turns are listed in
   `s->reached`, in the order they were first reached, their counts left in `s->counts`.
   Returns how many, or BAD_POSTING, BAD_LINK, NO_MEMORY. */
static Py_ssize_t reach_rest(const Call *c, Scratch *s, const int32_t *posting, Py_ssize_t size,
                             Py_ssize_t from, const int32_t *in_order, double *in_order_counts,
                             Py_ssize_t n) {
    if (counts_made(s) < 0) return NO_MEMORY;
    Rest rest = {s->counts, s->reached, 0, in_order, in_order_counts, n,
                 n > 0 ? in_order[n - 1] : -1};
    double *counts = s->counts;
    int32_t back_turns[MAX_NEAR_TURNS], ahead_turns[MAX_NEAR_TURNS];
    for (Py_ssize_t i = from; i < size;) {
        int32_t turn = posting[i];
        Py_ssize_t count = posting_run(c, posting, size, i, 1, counts);
        i += count;
        if (turn < 0 || (Py_ssize_t)turn >= c->size) return BAD_POSTING;
        double near = (double)count * c->near_weight, own = (double)count * c->own_weight;
        int back, ahead;
        if (window(c, turn, near, back_turns, &back, ahead_turns, &ahead) < 0) return BAD_LINK;
        for (int k = back - 1; k >= 0; k--) add_count(&rest, back_turns[k], near);
        add_count(&rest, turn, own);
        for (int k = 0; k < ahead; k++) add_count(&rest, ahead_turns[k], near);
    }
    return rest.n_reached;
}

/* What adding a term's share to the scores needs. */
typedef struct {
    double *scores;            /* dense, one a turn number */
    int32_t *scored;           /* the turns with a score, in the order first reached */
    Py_ssize_t n_scored;
    const int32_t *window_lengths;
    double norms[NORMS];       /* the length norm of a window of each length below NORMS */
    double k1, b, average;
    double idf;                /* the current term's */
} Shares;

/* Adds the current term's share to the score of turn `at`, where its weighted count is
   `frequency`: the definition's expression, in its order. */
static ALWAYS_INLINE void add_share(Shares *shares, int32_t at, double frequency,
                                    const uint32_t *cells) {
    double held = shares->scores[at];
    if (held == 0.0) shares->scored[shares->n_scored++] = at;  /* first reached by this query */
    int32_t length;
    if (cells != NULL) {
        uint32_t packed = (cells[at] >> CELL_LENGTH_SHIFT) & CELL_LENGTH_ESCAPE;
        length = packed == CELL_LENGTH_ESCAPE ? shares->window_lengths[at] : (int32_t)packed;
    } else {
        length = shares->window_lengths[at];
    }
    double k1 = shares->k1, b = shares->b;
    double length_norm = (uint32_t)length < NORMS
                             ? shares->norms[length]
                             : k1 * (1 - b + b * (double)length / shares->average);
    shares->scores[at] = held + shares->idf * frequency * (k1 + 1) / (frequency + length_norm);
}

/* The ranking, reading each turn's cell from `cells`, or (NULL) the columns. */
static ALWAYS_INLINE void run_with(Call *c, Scratch *s, const uint32_t *cells) {
    double *scores = s->scores;
    int32_t *scored = s->scored;
    double average = c->total_length > 0 ? (double)c->total_length / (double)c->turns : 1.0;
    Shares shares = {scores, scored, 0, c->window_lengths, {0}, c->k1, c->b, average, 0.0};
    for (int length = 0; length < NORMS; length++)
        shares.norms[length] = c->k1 * (1 - c->b + c->b * (double)length / average);

    for (Py_ssize_t t = 0; t < c->terms; t++) {
        const int32_t *posting = c->postings[t];
        Py_ssize_t size = c->posting_sizes[t];
        Py_ssize_t most = size * (2 * (Py_ssize_t)c->near_turns + 1);  /* each turn once */
        if (c->in_order && reach_room(s, most < c->size ? most : c->size) < 0) {
            c->error = "out of memory";
            return;
        }
        int32_t *turns = s->reach;
        double *counts = s->reach_counts;
        Py_ssize_t stop = 0, n = 0, n_rest = 0;
        if (c->in_order) n = reach_in_order(c, posting, size, turns, counts, &stop, cells);
        if (n >= 0 && stop < size) n_rest = reach_rest(c, s, posting, size, stop, turns, counts, n);
        if (n < 0 || n_rest < 0) {
            n = n < 0 ? n : n_rest;
            c->error = n == NO_MEMORY     ? "out of memory"
                     : n == BAD_POSTING ? "a posting names a turn that is not stored"
                                        : "a window link names a turn that is not stored";
            return;
        }
        Py_ssize_t moved = 0;  /* turns of the part in order that the rest reached too */
        if (n_rest > 0)
            for (Py_ssize_t r = 0; r < n; r++) moved += counts[r] == 0.0;
        Py_ssize_t reach = n - moved + n_rest;
        shares.idf = log(1.0 + ((double)(c->turns - reach) + 0.5) / ((double)reach + 0.5));
        /* The term's share of each score: the part in order, then the rest. */
        for (Py_ssize_t r = 0; r < n; r++) {
            if (r + AHEAD < n) {
                int32_t soon = turns[r + AHEAD];
                PREFETCH(&scores[soon]);
                if (cells != NULL) PREFETCH(&cells[soon]);
                else PREFETCH(&c->window_lengths[soon]);
            }
            double frequency = counts[r];
            if (frequency == 0.0) continue;  /* moved to the rest */
            add_share(&shares, turns[r], frequency, cells);
        }
        for (Py_ssize_t r = 0; r < n_rest; r++) {
            if (r + AHEAD < n_rest) {
                int32_t soon = s->reached[r + AHEAD];
                PREFETCH(&scores[soon]);
                PREFETCH(&c->window_lengths[soon]);
                PREFETCH(&s->counts[soon]);
            }
            int32_t at = s->reached[r];
            double frequency = s->counts[at];
            s->counts[at] = 0.0;
            add_share(&shares, at, frequency, cells);
        }
    }

    Py_ssize_t kept = 0, n_scored = shares.n_scored;
    double boost = 1 + c->speaker_boost;
    int filtered = c->n_checks > 0 || c->timed;
    for (Py_ssize_t r = 0; r < n_scored; r++) {
        if (r + AHEAD < n_scored) {
            /* Not the speaker's cell or column: once the heap is full, few turns get so far
               that it is read, and asking for it for every turn took 7% of a call at 1M. */
            PREFETCH(&scores[scored[r + AHEAD]]);
        }
        int32_t at = scored[r];
        Hit hit = {scores[at], at};
        scores[at] = 0.0;
        /* Filtered out after scoring: the statistics stay those of every turn stored. */
        if (filtered && !kept_by_filter(c, at)) continue;
        /* A full heap whose worst beats even the boosted score: no need to look further. */
        if (kept == c->limit && hit.score * boost < c->best[0].score) continue;
        int32_t speaker;
        if (cells != NULL) {
            uint32_t packed = cells[at] >> CELL_SPEAKER_SHIFT;
            speaker = packed == CELL_SPEAKER_ESCAPE ? c->speakers[at] : (int32_t)packed;
        } else {
            speaker = c->speakers[at];
        }
        if (speaker >= 0 && speaker < c->named_size && c->named[speaker]) hit.score *= boost;
        if (kept < c->limit) {
            c->best[kept] = hit;
            sift_up(c->best, kept++);
        } else if (ranks_before(&hit, &c->best[0])) {
            c->best[0] = hit;
            sift_down(c->best, kept, 0);
        }
    }
    qsort(c->best, (size_t)kept, sizeof(Hit), compare_hits);
    c->found = kept;
}

/* The ranking proper; runs without the GIL. On a broken index or out of memory it sets
   c->error and leaves the scratch dirty (the caller drops it). */
static void run(Call *c, Scratch *s) {
    if (c->cells != NULL) run_with(c, s, c->cells);
    else run_with(c, s, NULL);
}

/* A buffer of C ints (array("i"), an int32 numpy array), read-only, contiguous. */
static int int32_view(PyObject *object, Py_buffer *view, const char *what) {
    if (PyObject_GetBuffer(object, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return -1;
    const char *format = view->format ? view->format : "B";
    if (*format == '@' || *format == '=' || *format == '<') format++;
    if (view->itemsize != 4 || (strcmp(format, "i") != 0 && strcmp(format, "l") != 0)) {
        PyErr_Format(PyExc_TypeError, "%s must be a buffer of 32-bit ints (array('i'))", what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* A buffer of unsigned 32-bit ints (array('I')), contiguous; writable when `flags` says so. */
static int uint32_view(PyObject *object, Py_buffer *view, int flags, const char *what) {
    if (PyObject_GetBuffer(object, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | flags) < 0)
        return -1;
    const char *format = view->format ? view->format : "B";
    if (*format == '@' || *format == '=' || *format == '<') format++;
    if (view->itemsize != 4 || (strcmp(format, "I") != 0 && strcmp(format, "L") != 0)) {
        PyErr_Format(PyExc_TypeError, "%s must be a buffer of unsigned 32-bit ints (array('I'))",
                     what);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(rank_doc,
"rank(postings, before, after, window_lengths, speakers, named, turns, total_length, limit,\n"
"     near_turns, own_weight, near_weight, k1, b, speaker_boost, checks=None, times=None,\n"
"     cells=None)\n"
"     -> [(turn, score), ...]\n\n"
"The best `limit` turns, best first, ties to the earlier turn; see himga.memory.ranking.\n"
"`turns` is how many turns are stored; the arrays cover every turn number (len(before)).\n"
"`checks`: (column, mask) pairs, a turn kept when mask[column[turn]] is non-zero for each;\n"
"`times`: (array('q') of times, low, high), a turn kept when low <= its time < high.\n"
"`cells`: each turn number's cell as cells() makes it (array('I'), near_turns at most 3). From\n"
"131,072 turn numbers on (IN_ORDER_FROM), every turn's window length and speaker are read from\n"
"its cell, and its window's turns too while they are numbered one after another (the links\n"
"after that); below, the cells are not read.");

static PyObject *rank(PyObject *module, PyObject *args) {
    PyObject *postings_arg, *before_arg, *after_arg, *lengths_arg, *speakers_arg, *named_arg;
    Py_ssize_t turns, limit;
    long long total_length;
    int near_turns;
    double own_weight, near_weight, k1, b, speaker_boost;
    PyObject *checks_arg = Py_None, *times_arg = Py_None, *cells_arg = Py_None;
    if (!PyArg_ParseTuple(args, "OOOOOOnLniddddd|OOO:rank", &postings_arg, &before_arg, &after_arg,
                          &lengths_arg, &speakers_arg, &named_arg, &turns, &total_length, &limit,
                          &near_turns, &own_weight, &near_weight, &k1, &b, &speaker_boost,
                          &checks_arg, &times_arg, &cells_arg))
        return NULL;
    if (turns < 0 || turns > INT32_MAX || total_length < 0) {
        PyErr_SetString(PyExc_ValueError, "turns and total_length must be >= 0 (turns < 2**31)");
        return NULL;
    }
    if (near_turns < 0 || near_turns > MAX_NEAR_TURNS) {
        PyErr_Format(PyExc_ValueError, "near_turns must be 0 to %d", MAX_NEAR_TURNS);
        return NULL;
    }
    if (cells_arg != Py_None && near_turns > CELL_MOST_NEAR) {
        PyErr_Format(PyExc_ValueError, "cells hold windows of near_turns up to %d", CELL_MOST_NEAR);
        return NULL;
    }
    if (!(own_weight > 0) || !(near_weight >= 0) || !(k1 >= 0) || !(b >= 0 && b <= 1) ||
        !(speaker_boost >= 0)) {
        PyErr_SetString(PyExc_ValueError,
                        "own_weight must be > 0; near_weight, k1, speaker_boost >= 0; b in [0, 1]");
        return NULL;
    }
    PyObject *terms = PySequence_Fast(postings_arg, "postings must be a sequence of buffers");
    if (terms == NULL) return NULL;
    Py_ssize_t n_terms = PySequence_Fast_GET_SIZE(terms);
    if (limit <= 0 || n_terms == 0 || turns == 0) {
        Py_DECREF(terms);
        return PyList_New(0);
    }

    PyObject *result = NULL;
    Py_buffer links[5];  /* before, after, window_lengths, speakers, named */
    int held = 0;
    PyObject *checks = NULL;
    Py_ssize_t n_checks = 0, checked = 0;
    Py_buffer *check_views = NULL; /* each check's column, then its mask */
    const int32_t **check_columns = NULL;
    const unsigned char **check_masks = NULL;
    Py_ssize_t *check_sizes = NULL, *column_sizes = NULL;
    Py_buffer times_view, cells_view;
    int timed = 0, celled = 0;
    long long low = 0, high = 0;
    Py_buffer *views = PyMem_Calloc((size_t)n_terms, sizeof(Py_buffer));
    const int32_t **postings = PyMem_Calloc((size_t)n_terms, sizeof(int32_t *));
    Py_ssize_t *sizes = PyMem_Calloc((size_t)n_terms, sizeof(Py_ssize_t));
    Py_ssize_t viewed = 0;
    Hit *best = NULL;
    Scratch *scratch = NULL;
    if (views == NULL || postings == NULL || sizes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (; viewed < n_terms; viewed++) {
        if (int32_view(PySequence_Fast_GET_ITEM(terms, viewed), &views[viewed], "a posting") < 0)
            goto done;
        postings[viewed] = views[viewed].buf;
        sizes[viewed] = views[viewed].len / 4;
    }
    PyObject *arrays[4] = {before_arg, after_arg, lengths_arg, speakers_arg};
    const char *names[4] = {"before", "after", "window_lengths", "speakers"};
    Py_ssize_t size = 0;
    for (; held < 4; held++) {
        if (int32_view(arrays[held], &links[held], names[held]) < 0) goto done;
        if (held == 0) size = links[0].len / 4;
        if (links[held].len / 4 < size || size < turns) {
            PyErr_Format(PyExc_ValueError, "%s holds fewer than len(before) >= `turns` entries",
                         names[held]);
            held++;
            goto done;
        }
    }
    if (PyObject_GetBuffer(named_arg, &links[4], PyBUF_SIMPLE) < 0) goto done;
    held++;
    if (checks_arg != Py_None) {
        checks = PySequence_Fast(checks_arg, "checks must be a sequence of (column, mask)");
        if (checks == NULL) goto done;
        n_checks = PySequence_Fast_GET_SIZE(checks);
        check_views = PyMem_Calloc((size_t)(2 * n_checks + 1), sizeof(Py_buffer));
        check_columns = PyMem_Calloc((size_t)(n_checks + 1), sizeof(int32_t *));
        check_masks = PyMem_Calloc((size_t)(n_checks + 1), sizeof(unsigned char *));
        check_sizes = PyMem_Calloc((size_t)(n_checks + 1), sizeof(Py_ssize_t));
        column_sizes = PyMem_Calloc((size_t)(n_checks + 1), sizeof(Py_ssize_t));
        if (!check_views || !check_columns || !check_masks || !check_sizes || !column_sizes) {
            PyErr_NoMemory();
            goto done;
        }
        for (; checked < n_checks; checked++) {
            PyObject *pair = PySequence_Fast_GET_ITEM(checks, checked);
            PyObject *column, *mask;
            if (!PyArg_ParseTuple(pair, "OO:check", &column, &mask)) goto done;
            if (int32_view(column, &check_views[2 * checked], "a check's column") < 0) goto done;
            if (PyObject_GetBuffer(mask, &check_views[2 * checked + 1], PyBUF_SIMPLE) < 0) {
                PyBuffer_Release(&check_views[2 * checked]);
                goto done;
            }
            check_columns[checked] = check_views[2 * checked].buf;
            check_masks[checked] = check_views[2 * checked + 1].buf;
            check_sizes[checked] = check_views[2 * checked + 1].len;
            column_sizes[checked] = check_views[2 * checked].len / 4;
        }
    }
    if (times_arg != Py_None) {
        PyObject *column;
        if (!PyArg_ParseTuple(times_arg, "OLL:times", &column, &low, &high)) goto done;
        if (PyObject_GetBuffer(column, &times_view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
            goto done;
        timed = 1;
        if (times_view.itemsize != 8) {
            PyErr_SetString(PyExc_ValueError, "times must be a buffer of 64-bit ints (array('q'))");
            goto done;
        }
    }
    if (cells_arg != Py_None) {
        if (uint32_view(cells_arg, &cells_view, 0, "cells") < 0) goto done;
        celled = 1;
        if (cells_view.len / 4 < size) {
            PyErr_SetString(PyExc_ValueError, "cells holds fewer than len(before) entries");
            goto done;
        }
    }
    Py_ssize_t room = limit < size ? limit : size;
    best = PyMem_Malloc((size_t)(room > 0 ? room : 1) * sizeof(Hit));
    scratch = scratch_take(size);
    if (best == NULL || scratch == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Call call = {
        .terms = n_terms, .postings = postings, .posting_sizes = sizes,
        .before = links[0].buf, .after = links[1].buf, .window_lengths = links[2].buf,
        .speakers = links[3].buf, .named = links[4].buf, .named_size = links[4].len,
        .turns = turns, .size = size, .total_length = total_length, .near_turns = near_turns,
        .own_weight = own_weight, .near_weight = near_weight, .k1 = k1, .b = b,
        .speaker_boost = speaker_boost, .limit = room, .best = best, .found = 0, .error = NULL,
        .n_checks = n_checks, .check_columns = check_columns, .check_masks = check_masks,
        .check_sizes = check_sizes, .column_sizes = column_sizes, .timed = timed,
        .times = timed ? times_view.buf : NULL, .times_size = timed ? times_view.len / 8 : 0,
        .low = low, .high = high, .in_order = size >= in_order_from,
        .cells = celled && size >= in_order_from ? cells_view.buf : NULL,
    };
    Py_BEGIN_ALLOW_THREADS
    run(&call, scratch);
    Py_END_ALLOW_THREADS
    if (call.error != NULL) {
        /* A broken index: the scratch may hold values, so it is not reused. */
        scratch_free(scratch);
        scratch = NULL;
        PyErr_SetString(PyExc_ValueError, call.error);
        goto done;
    }
    result = PyList_New(call.found);
    if (result == NULL) goto done;
    for (Py_ssize_t i = 0; i < call.found; i++) {
        PyObject *pair = Py_BuildValue("(id)", best[i].turn, best[i].score);
        if (pair == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, pair);
    }

done:
    if (scratch != NULL) scratch_give(scratch);
    PyMem_Free(best);
    for (int i = 0; i < held; i++) PyBuffer_Release(&links[i]);
    for (Py_ssize_t i = 0; i < 2 * checked; i++) PyBuffer_Release(&check_views[i]);
    if (timed) PyBuffer_Release(&times_view);
    if (celled) PyBuffer_Release(&cells_view);
    PyMem_Free(check_views);
    PyMem_Free(check_columns);
    PyMem_Free(check_masks);
    PyMem_Free(check_sizes);
    PyMem_Free(column_sizes);
    Py_XDECREF(checks);
    for (Py_ssize_t i = 0; i < viewed; i++) PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    PyMem_Free(postings);
    PyMem_Free(sizes);
    Py_DECREF(terms);
    return result;
}

PyDoc_STRVAR(cells_doc,
"cells(cells, numbers, before, after, window_lengths, speakers, near_turns) -> None\n\n"
"Writes the cell of each turn number of `numbers` (array('i')) into `cells` (array('I'), one\n"
"a turn number), from the columns rank() takes: its neighbours up to near_turns (at most 3)\n"
"each side, whether they are numbered one after another, its window length and speaker.\n"
"ValueError on a number or link outside the columns.");

static PyObject *cells(PyObject *module, PyObject *args) {
    PyObject *arrays[6];
    int near_turns;
    if (!PyArg_ParseTuple(args, "OOOOOOi:cells", &arrays[0], &arrays[1], &arrays[2], &arrays[3],
                          &arrays[4], &arrays[5], &near_turns))
        return NULL;
    if (near_turns < 0 || near_turns > CELL_MOST_NEAR) {
        PyErr_Format(PyExc_ValueError, "cells hold windows of near_turns 0 to %d", CELL_MOST_NEAR);
        return NULL;
    }
    const char *names[6] = {"cells", "numbers", "before", "after", "window_lengths", "speakers"};
    Py_buffer views[6];
    int held = 0;
    PyObject *result = NULL;
    if (uint32_view(arrays[0], &views[0], PyBUF_WRITABLE, names[0]) < 0) return NULL;
    for (held = 1; held < 6; held++)
        if (int32_view(arrays[held], &views[held], names[held]) < 0) goto done;
    Py_ssize_t size = views[0].len / 4;
    for (int k = 2; k < 6; k++) {
        if (views[k].len / 4 < size) {
            PyErr_Format(PyExc_ValueError, "%s holds fewer entries than cells", names[k]);
            goto done;
        }
    }
    uint32_t *out = views[0].buf;
    const int32_t *numbers = views[1].buf, *before = views[2].buf, *after = views[3].buf;
    const int32_t *lengths = views[4].buf, *speakers = views[5].buf;
    for (Py_ssize_t i = 0; i < views[1].len / 4; i++) {
        int32_t turn = numbers[i];
        if (turn < 0 || turn >= size) {
            PyErr_SetString(PyExc_ValueError, "a number is not a turn number of the columns");
            goto done;
        }
        uint32_t in_order = 1, counted[2] = {0, 0};
        const int32_t *links[2] = {before, after};
        for (int side = 0; side < 2; side++) {
            int32_t other = turn;
            while ((int)counted[side] < near_turns) {
                other = links[side][other];
                if (bad_link(other, size)) {
                    PyErr_SetString(PyExc_ValueError, "a link names no turn number of the columns");
                    goto done;
                }
                if (other < 0) break;
                counted[side]++;
                int32_t step = (int32_t)counted[side];
                in_order &= other == (side == 0 ? turn - step : turn + step);
            }
        }
        uint32_t length = lengths[turn] >= 0 && (uint32_t)lengths[turn] < CELL_LENGTH_ESCAPE
                              ? (uint32_t)lengths[turn] : CELL_LENGTH_ESCAPE;
        uint32_t speaker = speakers[turn] >= 0 && (uint32_t)speakers[turn] < CELL_SPEAKER_ESCAPE
                               ? (uint32_t)speakers[turn] : CELL_SPEAKER_ESCAPE;
        out[turn] = counted[0] | counted[1] << 2 | (in_order ? CELL_IN_ORDER : 0u) |
                    length << CELL_LENGTH_SHIFT | speaker << CELL_SPEAKER_SHIFT;
    }
    result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < held; k++) PyBuffer_Release(&views[k]);
    return result;
}

PyDoc_STRVAR(numbers_doc,
"numbers(text) -> bytes\n\n"
"The non-negative decimal numbers in `text` (an ASCII str of numbers and spaces, as SQLite's\n"
"group_concat writes them) as native 32-bit ints, for array('i').frombytes. ValueError on any\n"
"other character or a number of 2**31 or more.");

static PyObject *numbers(PyObject *module, PyObject *text) {
    if (!PyUnicode_Check(text) || !PyUnicode_IS_ASCII(text)) {
        PyErr_SetString(PyExc_ValueError, "numbers() takes an ASCII str");
        return NULL;
    }
    Py_ssize_t size = PyUnicode_GET_LENGTH(text);
    const char *at = (const char *)PyUnicode_1BYTE_DATA(text), *end = at + size;
    /* At most one number every two characters (a digit and a space). */
    int32_t *out = PyMem_Malloc(((size_t)size / 2 + 1) * sizeof(int32_t));
    if (out == NULL) return PyErr_NoMemory();
    Py_ssize_t n = 0;
    while (at < end) {
        if (*at == ' ') {
            at++;
            continue;
        }
        int64_t value = 0;
        const char *first = at;
        while (at < end && *at >= '0' && *at <= '9' && value <= INT32_MAX) {
            value = value * 10 + (*at++ - '0');
        }
        if (at == first || value > INT32_MAX || (at < end && *at != ' ')) {
            PyMem_Free(out);
            PyErr_SetString(PyExc_ValueError, "numbers() reads numbers below 2**31 and spaces");
            return NULL;
        }
        out[n++] = (int32_t)value;
    }
    PyObject *result = PyBytes_FromStringAndSize((const char *)out, n * (Py_ssize_t)sizeof(int32_t));
    PyMem_Free(out);
    return result;
}

PyDoc_STRVAR(in_order_from_doc,
"_in_order_from(turns) -> int\n\n"
"For tests: from how many turn numbers on rank() walks a term's windows in turn order where\n"
"their turns are numbered one after another (below, it spreads them over dense counts); the\n"
"two ways give the same scores, to the bit. Returns the number before.");

static PyObject *set_in_order_from(PyObject *module, PyObject *turns) {
    Py_ssize_t value = PyLong_AsSsize_t(turns);
    if (value == -1 && PyErr_Occurred()) return NULL;
    if (value < 0) {
        PyErr_SetString(PyExc_ValueError, "_in_order_from takes a number of turns >= 0");
        return NULL;
    }
    Py_ssize_t before = in_order_from;
    in_order_from = value;
    return PyLong_FromSsize_t(before);
}

static PyMethodDef methods[] = {
    {"rank", rank, METH_VARARGS, rank_doc},
    {"cells", cells, METH_VARARGS, cells_doc},
    {"_in_order_from", set_in_order_from, METH_O, in_order_from_doc},
    {"numbers", numbers, METH_O, numbers_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "himga.memory._ranking",
    "The heavy part of himga.memory.ranking.rank, in C, run without the GIL.", -1, methods,
};

PyMODINIT_FUNC PyInit__ranking(void) {
    PyObject *made = PyModule_Create(&module);
    if (made != NULL && PyModule_AddIntConstant(made, "CELL_MOST_NEAR", CELL_MOST_NEAR) < 0)
        Py_CLEAR(made);
    return made;
}
