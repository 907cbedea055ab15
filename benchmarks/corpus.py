"""The messages and questions the memory benchmarks measure with, the same ones every run.

`natural`: real conversation text. The turns of a LoCoMo file (its sessions, speakers, dates and
turn lengths) are repeated as often as needed, and each copy's turns are filled with all the
words of the file's turns, shuffled anew: the vocabulary and word frequencies of real dialogue
(stopwords, names, the words questions use), at any size, without repeating one sentence.
`questions` are the file's own questions, the words users ask with.

`dictionary`: the same conversations' shape with new English in every turn, drawn from the
bigrams of a real dictionary's sentences (benchmarks/dictionary_text.py says why: no registry
reached here ships a million distinct English messages); the 1M-message benchmarks use it.

`invented`: the earlier synthetic corpus, a Zipf-like made-up vocabulary whose query words are
rare; kept as a second, labelled line, since its figures do not carry over to real questions.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

SEED = 20240508
SESSION_TURNS = 20
SESSIONS_PER_CONVERSATION = 30
_FUNCTION_TEXT = (
    "i the to and a you it of that in is my was for so me but on this have with just be "
    "we at it's like what about your really are do not can all they that's out up too"
)


def _shape(samples: list[Any]) -> list[tuple[int, int, str, str, int]]:
    """Each turn of the file as (sample, session index, speaker, date, number of words)."""
    return [
        (s, i, message.role, session.date_str, len(message.content.split()))
        for s, sample in enumerate(samples)
        for i, session in enumerate(sample.sessions)
        for message in session.messages
    ]


def dictionary(path: str | Path, count: int) -> list[tuple[Any, Any]]:
    """`count` (Message, Session) pairs in the LoCoMo file's conversations' shape (its sessions,
    speakers, dates and turn lengths, repeated as `natural` repeats them), each turn's text new
    English drawn from GCIDE's bigrams (benchmarks/dictionary_text.py): no text repeats."""
    from benchmarks.dictionary_text import texts
    from himga.data import load_dataset
    from himga.data.conversation import Message, Session

    shape = _shape(load_dataset("locomo", path))
    turns = [shape[n % len(shape)] for n in range(count)]
    said = texts([length for *_, length in turns])
    pairs: list[tuple[Any, Any]] = []
    sessions: dict[tuple[int, int, int], Any] = {}
    for n, ((sample, index, speaker, date, _), text) in enumerate(zip(turns, said, strict=True)):
        copy = n // len(shape)
        session = sessions.get((copy, sample, index))
        if session is None:
            session = sessions[(copy, sample, index)] = Session(
                session_id=f"copy{copy}-conv{sample}-session{index}", date_str=date
            )
        pairs.append((Message(role=speaker, content=text, turn_id=f"T{n}"), session))
    return pairs


def natural(path: str | Path, count: int) -> list[tuple[Any, Any]]:
    """`count` (Message, Session) pairs of the LoCoMo file's turns, words reshuffled."""
    from himga.data import load_dataset
    from himga.data.conversation import Message, Session

    samples = load_dataset("locomo", path)
    shape = _shape(samples)
    words = [
        word
        for sample in samples
        for session in sample.sessions
        for message in session.messages
        for word in message.content.split()
    ]
    rng = random.Random(SEED)
    pairs: list[tuple[Any, Any]] = []
    copy = 0
    while len(pairs) < count:
        rng.shuffle(words)
        used = 0
        sessions: dict[tuple[int, int], Any] = {}
        for sample, index, speaker, date, length in shape[: count - len(pairs)]:
            session = sessions.get((sample, index))
            if session is None:
                session = sessions[(sample, index)] = Session(
                    session_id=f"copy{copy}-conv{sample}-session{index}", date_str=date
                )
            text = " ".join(words[used : used + length])
            used += length
            pairs.append((Message(role=speaker, content=text, turn_id=f"T{len(pairs)}"), session))
        copy += 1
    return pairs


def questions(path: str | Path, count: int) -> list[str]:
    """`count` of the LoCoMo file's questions, evenly spread over it (all of them, if fewer)."""
    from himga.data import load_dataset

    asked = [qa.question for sample in load_dataset("locomo", path) for qa in sample.qa_pairs]
    if len(asked) <= count:
        return asked
    return [asked[i * len(asked) // count] for i in range(count)]


def invented(count: int, offset: int = 0) -> list[tuple[Any, Any]]:
    """`count` synthetic (Message, Session) pairs: conversations of two speakers, sessions of
    SESSION_TURNS turns, turns of 6 to 30 words drawn from a Zipf-like vocabulary."""
    from himga.data.conversation import Message, Session

    words, weights = _vocabulary()
    cumulative = _accumulate(weights)
    rng = random.Random(SEED + offset)
    pairs: list[tuple[Any, Any]] = []
    session = None
    names = ("", "")
    for n in range(offset, offset + count):
        if n % SESSION_TURNS == 0 or session is None:
            conversation = n // (SESSION_TURNS * SESSIONS_PER_CONVERSATION)
            number = n // SESSION_TURNS
            session = Session(
                session_id=f"c{conversation}-s{number}", date_str=f"{number % 28 + 1} May, 2023"
            )
            names = (f"Speaker{2 * conversation % 97}", f"Speaker{(2 * conversation + 1) % 97}")
        text = " ".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(6, 30)))
        message = Message(role=names[n % 2], content=text.capitalize() + ".", turn_id=f"T{n}")
        pairs.append((message, session))
    return pairs


def invented_queries(count: int) -> list[str]:
    """Queries of the invented corpus: a speaker and three mid-frequency made-up words."""
    rng = random.Random(SEED - 1)
    words, _ = _vocabulary()
    middle = words[200:5000]
    return [
        f"What did Speaker{rng.randrange(97)} say about "
        f"{rng.choice(middle)}, {rng.choice(middle)} and {rng.choice(middle)}?"
        for _ in range(count)
    ]


def _vocabulary(size: int = 30_000) -> tuple[list[str], list[float]]:
    """Words and Zipf weights (1/rank): function words first, then pronounceable inventions."""
    rng = random.Random(SEED)
    consonants, vowels = "bcdfghjklmnprstvwz", "aeiou"
    words = _FUNCTION_TEXT.split()
    seen = set(words)
    while len(words) < size:
        length = rng.randint(2, 4)
        word = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(length))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words, [1 / rank for rank in range(1, size + 1)]


def _accumulate(values: list[float]) -> list[float]:
    total, out = 0.0, []
    for value in values:
        total += value
        out.append(total)
    return out
