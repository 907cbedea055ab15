/* himga.memory._ranking: the heavy part of himga.memory.ranking.rank, in C.

   It computes exactly what ranking.py's docstring defines (BM25 over each turn and, at a lower
   weight, its neighbours in the same session; Lucene's idf; a boost for the turns of a named
   speaker) in the same order of floating-point operations as the Python it replaced, so scores
   are bit for bit those of that code. The interpreter's lock is released while it runs, so
   other threads (other calls of a server) go on meanwhile.

   Per call: for each query term, its postings (the number of each turn holding it, once per
   occurrence, ascending) are spread over the turns' windows into `freq`, a dense array over all
   turns; the turns reached are listed, their share of the score added into `score`, and `freq`
   cleared again. The best `limit` of the turns with a score are then kept in a bounded heap;
   a filter (checks of columns against masks, a time range) drops turns just before the heap,
   so the statistics stay those of every turn and the limit is filled from the turns it keeps.
   Turn numbers may have holes (deleted turns): the arrays cover every number, `turns` counts
   the stored turns only.
   Ranking is bound by memory, not arithmetic: at a million turns nearly every turn reached
   misses the cache, so each loop asks AHEAD entries early for the memory it will touch (at 1M
   messages this halved the time of a call; `make bench-keyword-1m`).
   The dense arrays are reused from call to call (a free list guarded by the interpreter's lock),
   so a call touches only the turns it reaches, however many turns are stored. They cost 24 bytes
   a stored turn (and a quarter more, for growth) for each search running at once, and stay
   allocated for the next. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NEAR_TURNS 64
/* How many entries ahead the loops over turns ask for the memory they will touch: at a million
   turns each turn reached is a cache miss, and the loops would otherwise wait for each in turn.
   A hint only; it changes no result. */
#define AHEAD 32
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch((address), 1, 1)
#else
#define PREFETCH(address) ((void)0)
#endif

/* What a call holds of one turn, side by side: the pass over a term's postings writes `freq`
   and the pass over the turns it reached reads both. 16 bytes, so a cell never straddles two
   cache lines and a window's five cells take 80 bytes: at a million turns each cell touched is
   a cache miss, and searches running at once share the memory's bandwidth. (The turn's length
   norm is computed again for each term that reaches it, from the window length the pass
   reads anyway, by the same expression, so to the same bits.) */
typedef struct {
    double freq;         /* the current term's weighted count in the turn's window */
    double score;        /* the turn's score so far */
} Cell;

/* Dense per-turn arrays for one call; freq and score zero between calls. */
typedef struct Scratch {
    struct Scratch *next;
    Py_ssize_t size;
    Cell *cells;         /* one a turn number */
    int32_t *reached;    /* the turns whose window holds the current term */
    int32_t *scored;     /* the turns with a score */
} Scratch;

static Scratch *free_scratch = NULL; /* guarded by the GIL */

static void scratch_free(Scratch *s) {
    if (s == NULL) return;
    free(s->cells);
    free(s->reached);
    free(s->scored);
    free(s);
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
    s = calloc(1, sizeof(Scratch));
    if (s == NULL) return NULL;
    s->size = room;
    s->cells = calloc((size_t)room, sizeof(Cell));
    s->reached = malloc((size_t)room * sizeof(int32_t));
    s->scored = malloc((size_t)room * sizeof(int32_t));
    if (!s->cells || !s->reached || !s->scored) {
        scratch_free(s);
        return NULL;
    }
    return s;
}

static void scratch_give(Scratch *s) {
    s->next = free_scratch;
    free_scratch = s;
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

/* Add `count` occurrences of a term in `turn` to the windows holding it (the turn itself at
   own_weight, its neighbours at near_weight), in session order; list the turns first reached. */
static inline int spread(const Call *c, Cell *cells, int32_t *reached, Py_ssize_t *n_reached,
                         int32_t turn, Py_ssize_t count) {
    int32_t back[MAX_NEAR_TURNS], other = turn;
    int held = 0;
    while (held < c->near_turns) {
        other = c->before[other];
        if (bad_link(other, c->size)) return -1;
        if (other < 0) break;
        back[held++] = other;
    }
    double near = (double)count * c->near_weight, own = (double)count * c->own_weight;
    if (near != 0.0) {
        for (int i = held - 1; i >= 0; i--) {
            int32_t at = back[i];
            if (cells[at].freq == 0.0) reached[(*n_reached)++] = at;
            cells[at].freq = cells[at].freq + near;
        }
    }
    if (cells[turn].freq == 0.0) reached[(*n_reached)++] = turn;
    cells[turn].freq = cells[turn].freq + own;
    other = turn;
    for (int ahead = 0; ahead < c->near_turns; ahead++) {
        other = c->after[other];
        if (bad_link(other, c->size)) return -1;
        if (other < 0 || near == 0.0) break;
        if (cells[other].freq == 0.0) reached[(*n_reached)++] = other;
        cells[other].freq = cells[other].freq + near;
    }
    return 0;
}

/* The ranking proper; runs without the GIL. On a broken index it sets c->error and leaves the
   scratch dirty (the caller drops it). */
static void run(Call *c, Scratch *s) {
    Cell *cells = s->cells;
    int32_t *reached = s->reached, *scored = s->scored;
    Py_ssize_t n_scored = 0;
    double average = c->total_length > 0 ? (double)c->total_length / (double)c->turns : 1.0;
    double k1 = c->k1, b = c->b;

    for (Py_ssize_t t = 0; t < c->terms; t++) {
        const int32_t *posting = c->postings[t];
        Py_ssize_t size = c->posting_sizes[t], n_reached = 0;
        for (Py_ssize_t i = 0; i < size;) {
            if (i + AHEAD < size) {
                int32_t soon = posting[i + AHEAD];
                if ((uint32_t)soon < (uint32_t)c->size) {
                    PREFETCH(&c->before[soon]);
                    PREFETCH(&c->after[soon]);
                    PREFETCH(&cells[soon]);
                }
            }
            int32_t turn = posting[i];
            Py_ssize_t count = 1;
            while (i + count < size && posting[i + count] == turn) count++;
            i += count;
            if (turn < 0 || (Py_ssize_t)turn >= c->size) {
                c->error = "a posting names a turn that is not stored";
                return;
            }
            if (spread(c, cells, reached, &n_reached, turn, count) < 0) {
                c->error = "a window link names a turn that is not stored";
                return;
            }
        }
        double idf = log(1.0 + ((double)(c->turns - n_reached) + 0.5) / ((double)n_reached + 0.5));
        for (Py_ssize_t r = 0; r < n_reached; r++) {
            if (r + AHEAD < n_reached) {
                int32_t soon = reached[r + AHEAD];
                PREFETCH(&cells[soon]);
                PREFETCH(&c->window_lengths[soon]);
            }
            int32_t at = reached[r];
            Cell *cell = &cells[at];
            double frequency = cell->freq;
            cell->freq = 0.0;
            double held = cell->score;
            if (held == 0.0) scored[n_scored++] = at;  /* first reached by this query */
            double length_norm = k1 * (1 - b + b * (double)c->window_lengths[at] / average);
            cell->score = held + idf * frequency * (k1 + 1) / (frequency + length_norm);
        }
    }

    Py_ssize_t kept = 0;
    double boost = 1 + c->speaker_boost;
    int filtered = c->n_checks > 0 || c->timed;
    for (Py_ssize_t r = 0; r < n_scored; r++) {
        if (r + AHEAD < n_scored) {
            PREFETCH(&cells[scored[r + AHEAD]]);
            PREFETCH(&c->speakers[scored[r + AHEAD]]);
        }
        int32_t at = scored[r];
        Hit hit = {cells[at].score, at};
        cells[at].score = 0.0;
        /* Filtered out after scoring: the statistics stay those of every turn stored. */
        if (filtered && !kept_by_filter(c, at)) continue;
        /* A full heap whose worst beats even the boosted score: no need to look further. */
        if (kept == c->limit && hit.score * boost < c->best[0].score) continue;
        int32_t speaker = c->speakers[at];
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

PyDoc_STRVAR(rank_doc,
"rank(postings, before, after, window_lengths, speakers, named, turns, total_length, limit,\n"
"     near_turns, own_weight, near_weight, k1, b, speaker_boost, checks=None, times=None)\n"
"     -> [(turn, score), ...]\n\n"
"The best `limit` turns, best first, ties to the earlier turn; see himga.memory.ranking.\n"
"`turns` is how many turns are stored; the arrays cover every turn number (len(before)).\n"
"`checks`: (column, mask) pairs, a turn kept when mask[column[turn]] is non-zero for each;\n"
"`times`: (array('q') of times, low, high), a turn kept when low <= its time < high.");

static PyObject *rank(PyObject *module, PyObject *args) {
    PyObject *postings_arg, *before_arg, *after_arg, *lengths_arg, *speakers_arg, *named_arg;
    Py_ssize_t turns, limit;
    long long total_length;
    int near_turns;
    double own_weight, near_weight, k1, b, speaker_boost;
    PyObject *checks_arg = Py_None, *times_arg = Py_None;
    if (!PyArg_ParseTuple(args, "OOOOOOnLniddddd|OO:rank", &postings_arg, &before_arg, &after_arg,
                          &lengths_arg, &speakers_arg, &named_arg, &turns, &total_length, &limit,
                          &near_turns, &own_weight, &near_weight, &k1, &b, &speaker_boost,
                          &checks_arg, &times_arg))
        return NULL;
    if (turns < 0 || turns > INT32_MAX || total_length < 0) {
        PyErr_SetString(PyExc_ValueError, "turns and total_length must be >= 0 (turns < 2**31)");
        return NULL;
    }
    if (near_turns < 0 || near_turns > MAX_NEAR_TURNS) {
        PyErr_Format(PyExc_ValueError, "near_turns must be 0 to %d", MAX_NEAR_TURNS);
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
    Py_buffer times_view;
    int timed = 0;
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
        .low = low, .high = high,
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

static PyMethodDef methods[] = {
    {"rank", rank, METH_VARARGS, rank_doc},
    {"numbers", numbers, METH_O, numbers_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "himga.memory._ranking",
    "The heavy part of himga.memory.ranking.rank, in C, run without the GIL.", -1, methods,
};

PyMODINIT_FUNC PyInit__ranking(void) { return PyModule_Create(&module); }
