"""Name matching (PROTOCOL §10): the same words in any order, accents, case and punctuation aside.

A payslip prints "SMITH, José" where the applicant writes "Jose Smith"; both are one person.
Matching compares word *sets*, so a missing middle name is a mismatch on purpose: the desk asks.
"""

from __future__ import annotations

import unicodedata


def name_words(name: str) -> frozenset[str]:
    """The words of a name after NFKD (combining marks dropped), casefold, and every character
    that is not a letter or digit replaced by a space."""
    decomposed = unicodedata.normalize("NFKD", name)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    spaced = "".join(c if c.isalnum() else " " for c in plain)
    return frozenset(spaced.split())


def same_name(first: str, second: str) -> bool:
    """True when the two names have the same words (and at least one)."""
    words = name_words(first)
    return bool(words) and words == name_words(second)
