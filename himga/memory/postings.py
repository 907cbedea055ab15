"""Postings: for each term, the turns holding it, as the shared ranking reads them.

A term's postings are the number of each turn holding it, once per occurrence (a term said
twice in a turn lists the turn twice), ascending: an array("i"), 4 bytes an occurrence, which
himga.memory.ranking hands to its C core as it is. Both keyword memories keep one in process
memory: KeywordMemory as its index, SQLiteKeywordMemory as a copy of its FTS5 table read in when
it opens. Turns are only ever appended (in ingest order), so a new turn appends its number to
the postings of its own terms and changes nothing else. A store that comes to delete or replace
turns must take their numbers out of the postings of their terms (`terms` of their content
gives them) and unlink them in Windows, or rebuild both, as SQLiteKeywordMemory does when it
opens; the C core reads postings in any order but ranks fastest on ascending ones.
"""

from __future__ import annotations

from array import array
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

    def extend(self, term: str, numbers: str) -> None:
        """Append turn numbers (each above any already there) to the postings of `term`, given
        as their decimals apart by spaces (as SQLite's group_concat gives them)."""
        self._lists.setdefault(term, array("i")).frombytes(_ranking.numbers(numbers))

    def of(self, terms: Iterable[str]) -> list[array[int]]:
        """The postings of each of `terms` that some turn holds, in the order given."""
        lists = self._lists
        return [lists[term] for term in terms if term in lists]
