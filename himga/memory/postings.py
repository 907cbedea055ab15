"""Postings: for each term, the turns holding it, as the shared ranking reads them.

A term's postings are the number of each turn holding it, once per occurrence (a term said
twice in a turn lists the turn twice), ascending: an array("i"), 4 bytes an occurrence, which
himga.memory.ranking hands to its C core as it is. Every keyword memory keeps one in process
memory, in the index it derives from its store (himga.memory.derived), read in when it opens.
A new turn appends its number to the postings of its own terms and changes nothing else. A
deleted or replaced turn's number is taken out of the postings of its old terms (found by
bisection, each array cut once per call), and a replaced turn's number goes into those of its
new terms at its place; the memory relinks it in its Windows under the same lock.
"""

from __future__ import annotations

import bisect
from array import array
from collections import defaultdict
from collections.abc import Iterable, Sequence

from himga.memory import _ranking


class Postings:
    """term -> the numbers of the turns holding it, once per occurrence, ascending."""

    def __init__(self) -> None:
        self._lists: dict[str, array[int]] = {}

    def __len__(self) -> int:
        """The number of distinct terms."""
        return len(self._lists)

    def add(self, first: int, terms: Iterable[Sequence[str]]) -> None:
        """Append turns numbered from `first` on, given each one's own terms, in order."""
        lists = self._lists
        for number, own in enumerate(terms, start=first):
            for term in own:
                numbers = lists.get(term)
                if numbers is None:
                    numbers = lists[term] = array("i")
                numbers.append(number)

    def add_at(self, numbers: Sequence[int], terms: Iterable[Sequence[str]]) -> None:
        """Append turns of these rising numbers (each above any held), given each one's own
        terms, in order."""
        lists = self._lists
        for number, own in zip(numbers, terms, strict=True):
            for term in own:
                held = lists.get(term)
                if held is None:
                    held = lists[term] = array("i")
                held.append(number)

    def insert(self, number: int, terms: Iterable[str]) -> None:
        """Put a turn's number, at its place, into the postings of its own `terms`."""
        lists = self._lists
        for term in terms:
            numbers = lists.get(term)
            if numbers is None:
                numbers = lists[term] = array("i")
            bisect.insort(numbers, number)

    def drop(self, numbers: Sequence[int], terms: Iterable[Sequence[str]]) -> None:
        """Take turns out of the postings of the terms they hold (`terms`, one list a turn)."""
        by_term: defaultdict[str, set[int]] = defaultdict(set)
        for number, own in zip(numbers, terms, strict=True):
            for term in own:
                by_term[term].add(number)
        lists = self._lists
        for term, gone in by_term.items():
            held = lists.get(term)
            if held is None:
                continue
            kept = array("i")
            start = 0
            for number in sorted(gone):  # each number's run of entries, cut out in one slice
                low = bisect.bisect_left(held, number, start)
                kept += held[start:low]
                start = bisect.bisect_right(held, number, low)
            kept += held[start:]
            if kept:
                lists[term] = kept
            else:
                del lists[term]

    def extend(self, term: str, numbers: str) -> None:
        """Append turn numbers (each above any already there) to the postings of `term`, given
        as their decimals apart by spaces (as SQLite's group_concat gives them)."""
        self._lists.setdefault(term, array("i")).frombytes(_ranking.numbers(numbers))

    def occurrences(self, term: str) -> int:
        """How many times `term` is held, counting each turn once per occurrence (0 if none)."""
        found = self._lists.get(term)
        return 0 if found is None else len(found)

    def of(self, terms: Iterable[str]) -> list[array[int]]:
        """The postings of each of `terms` that some turn holds, in the order given."""
        lists = self._lists
        return [lists[term] for term in terms if term in lists]
