"""Abbreviations: short form / long form pairs of a text, with their offsets.

Two engines:
- `schwartz-hearst` (default, pure Python): the algorithm of Schwartz & Hearst (PSB 2003,
  "A simple algorithm for identifying abbreviation definitions in biomedical text"), sentence
  by sentence: "long form (SF)" and "SF (long form)", a parenthesis after whitespace as in the
  paper's code (so "bis(p-nitrophenyl) phosphate" is a long form); a short form has 2-10 characters, at most
  two words, a letter, and starts with a letter or digit; the long form is the shortest run of
  whole words before the parenthesis (after the previous parenthesis and the last ", " or
  ". ", as the paper's code cuts it) whose characters hold the short form's in order, the
  first one starting a word; it has at most min(|SF| + 5, 2 |SF|) words.
- `ab3p`: NCBI's Ab3P (the rules PubTator and HunFlair2 use) through the `pyab3p` bindings,
  where installed (`pip install 'biozoo[link]'`; wheels exist for Linux x86-64 and Windows).

A document's abbreviations map each short form to its first long form (`expansions`); the
linker reads a mention that is (or holds) a short form as its long form.

Example:
    >>> find_abbreviations("Wilson disease (WD) is rare.")
    [Abbreviation(short='WD', long='Wilson disease', short_start=16, short_end=18, long_start=0, long_end=14)]
"""

from __future__ import annotations

import dataclasses
import functools
import re
import warnings

from biozoo.documents.sentences import split_sentences

ENGINES = ("schwartz-hearst", "ab3p")
DEFAULT_ENGINE = "schwartz-hearst"


@dataclasses.dataclass(frozen=True)
class Abbreviation:
    """One definition: `short` at [short_start, short_end) and `long` at [long_start, long_end)
    of the text it was found in (offsets add the offset the caller gave).

    Example:
        >>> find_abbreviations("Wilson disease (WD) is rare.")
        [Abbreviation(short='WD', long='Wilson disease', short_start=16, short_end=18, long_start=0, long_end=14)]
    """

    short: str
    long: str
    short_start: int
    short_end: int
    long_start: int
    long_end: int


def find_abbreviations(text, engine=DEFAULT_ENGINE, offset=0):
    """Every abbreviation definition in `text`, in text order (offsets shifted by `offset`)."""
    if engine == "schwartz-hearst":
        found = [a for start, end in split_sentences(text) for a in _schwartz_hearst(text, start, end)]
    elif engine == "ab3p":
        found = _ab3p(text)
    else:
        raise ValueError(f"abbreviation engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    return [dataclasses.replace(a, short_start=a.short_start + offset, short_end=a.short_end + offset,
                                long_start=a.long_start + offset, long_end=a.long_end + offset)
            for a in sorted(found, key=lambda a: (min(a.short_start, a.long_start), a.short_start))]


def expansions(abbreviations):
    """{short form: long form}, the first definition of each short form."""
    out = {}
    for abbreviation in abbreviations:
        out.setdefault(abbreviation.short, abbreviation.long)
    return out


def expand(mention, table):
    """`mention` with each whole-word short form of `table` replaced by its long form
    ("WD" -> "Wilson disease", "WD patients" -> "Wilson disease patients"); a definition the
    mention holds loses its short form ("superior vena cava (SVC) syndrome" -> "superior vena
    cava syndrome")."""
    if not table:
        return mention
    if mention in table:
        return table[mention]
    mention = _without_definitions(mention, table)
    pattern = _pattern(tuple(sorted(table, key=len, reverse=True)))
    return pattern.sub(lambda m: table[m.group(0)], mention)


def _without_definitions(mention, table):
    for short, long in table.items():
        token = f"({short})"
        at = mention.find(token)
        while at >= 0:
            before = mention[:at].rstrip()
            if before.lower().endswith(long.lower()):
                mention = before + mention[at + len(token):]
                at = mention.find(token, len(before))
            else:
                at = mention.find(token, at + 1)
    return mention


@functools.lru_cache(maxsize=256)
def _pattern(shorts):
    return re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(s) for s in shorts) + r")(?![\w-])")


# ------------------------------------------------------------------ Schwartz & Hearst

_WORDS = re.compile(r"[\s-]+")  # the paper's reference code counts words split at hyphens too
_NUMBER = re.compile(r"^[\d.,]+$")
_QUOTES = {'"': '"', "“": "”", "'": "'"}
_JOINERS = "-/–—"


def _is_short_form(candidate):
    words = candidate.split()
    return (2 <= len(candidate) <= 10 and len(words) <= 2 and any(c.isalpha() for c in candidate)
            and candidate[0].isalnum()
            and not (len(words) == 2 and any(_NUMBER.match(w) for w in words)))  # "10 dogs", "50 mg": amounts


def _best_long_form(short, long):
    """The start, in `long`, of the shortest suffix of whole words holding `short`'s letters
    and digits in order, its first character starting a word; None when there is none."""
    s, l = len(short) - 1, len(long) - 1
    while s >= 0:
        char = short[s].lower()
        if not char.isalnum():
            s -= 1
            continue
        while (l >= 0 and long[l].lower() != char) or (s == 0 and l > 0 and long[l - 1].isalnum()):
            l -= 1
        if l < 0:
            return None
        l -= 1
        s -= 1
    return _word_start(long, l + 1)


def _word_start(text, end):
    """Where the word holding text[end - 1] starts: after the last whitespace of any kind
    (a newline or a no-break space ends a word as a space does)."""
    while end > 0 and not text[end - 1].isspace():
        end -= 1
    return end


def _closing(sentence, open_at):
    depth = 0
    for i in range(open_at, len(sentence)):
        if sentence[i] == "(":
            depth += 1
        elif sentence[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return None


def _schwartz_hearst(text, start, end):
    sentence = text[start:end]
    found = []
    position = boundary = 0
    while True:
        open_at = sentence.find("(", position)
        if open_at < 0:
            break
        if open_at == 0 or not sentence[open_at - 1].isspace():  # as the paper's code, " (" only:
            position = open_at + 1  # not "bis(p-nitrophenyl)", which a long form may hold
            continue
        close_at = _closing(sentence, open_at)
        if close_at is None:
            break
        position = open_at + 1
        # as the paper's code: a long form starts after the previous parenthesis and after the
        # last ". " or ", " before this one
        marks = [sentence.rfind(mark, boundary, open_at) for mark in (". ", ", ")]
        long_from = max([boundary] + [at + 2 for at in marks if at >= 0])
        boundary = max(boundary, close_at + 1)
        inner_start = open_at + 1
        inner = sentence[inner_start:close_at]
        cut = min((i for i in (inner.find("; "), inner.find(", ")) if i >= 0), default=len(inner))
        short = inner[:cut].strip()
        short_start = inner_start + inner[:cut].find(short) if short else inner_start
        before = sentence[:open_at].rstrip()
        if not short or not before:
            continue
        # the paper's code compares with the long form candidate, not the whole sentence before
        if len(short.split()) > 2 or len(short) > len(sentence[long_from:open_at]):
            # "SF (long form)": the word before the parenthesis is the short form, with a capital;
            # the long form is the parenthesis up to its first ", " or "; "
            long = short
            word_start = _word_start(before, len(before))
            short, short_start = before[word_start:], word_start
            if not any(c.isupper() for c in short) or not _is_short_form(short):
                continue
            long_start = inner_start + inner.find(long)
            pair = _pair(sentence, short, short_start, long_start, long_start + len(long))
        elif _is_short_form(short):
            pair = _pair(sentence, short, short_start, long_from, open_at)
        else:
            continue
        if pair:
            found.append(Abbreviation(pair[0], pair[1], start + pair[2], start + pair[3], start + pair[4], start + pair[5]))
            position = close_at + 1
    return found


def _pair(sentence, short, short_start, long_from, long_to):
    """(short, long, offsets...) when the long form candidate sentence[long_from:long_to] holds
    a valid definition of `short`."""
    candidate = sentence[long_from:long_to].rstrip()
    begin = _best_long_form(short, candidate)
    if begin is None:
        return None
    long = candidate[begin:]
    while long[:1] in _JOINERS:  # "(IS)/transient ischemic attack (TIA)": the slash joins, not defines
        long, begin = long[1:], begin + 1
    if long[:1] in _QUOTES and long.endswith(_QUOTES[long[0]]) and len(long) > 2:  # "real world" -> real world
        long, begin = long[1:-1], begin + 1
    elif long[:1] == "[" and long.count("[") > long.count("]"):  # [sinus-cycle length -> sinus-cycle length
        long, begin = long[1:], begin + 1
    if any(long.count(opening) != long.count(closing) for opening, closing in ("()", "[]", "{}")):
        return None  # begins inside an earlier parenthesis ("[11C]raclopride" does not)
    words = len(_WORDS.split(long.strip()))
    letters = sum(c.isalnum() for c in short)
    if (len(long) < len(short) or short + " " in long or long.endswith(short) or words > 2 * letters
            or words > letters + 5 or letters > 10):
        return None
    long_start = long_from + begin
    return short, long, short_start, short_start + len(short), long_start, long_start + len(long)


def _occurrences(data, part):
    found, at = [], data.find(part)
    while at >= 0:
        found.append(at)
        at = data.find(part, at + 1)
    return found


def _closest_pair(data, short, long):
    """(short offset, long offset) of the occurrences of `short` and `long` in `data` nearest
    each other (a definition writes them side by side), or None when either is absent."""
    pairs = [(s, l) for s in _occurrences(data, short) for l in _occurrences(data, long)
             if s >= l + len(long) or l >= s + len(short)]
    return min(pairs, key=lambda p: min(abs(p[0] - p[1] - len(long)), abs(p[1] - p[0] - len(short))), default=None)


# ------------------------------------------------------------------ Ab3P

@functools.lru_cache(maxsize=1)
def _ab3p_engine():
    try:
        import pyab3p
    except ImportError:
        raise ImportError("the ab3p engine needs pyab3p (pip install 'biozoo[link]'; wheels for Linux x86-64 "
                          "and Windows); the schwartz-hearst engine needs nothing") from None
    return pyab3p.Ab3p()


def _ab3p(text):
    """Ab3P's pairs. Ab3P is given the text with every run of whitespace as one space (its own
    sentence splitter loses its place on runs, and prints so); its offsets count UTF-8 bytes of
    that text, mapped back to characters of `text` here."""
    normalized, origin = [], []
    for index, char in enumerate(text):
        if char.isspace():
            if normalized and normalized[-1] == " ":
                continue
            char = " "
        normalized.append(char)
        origin.append(index)
    normalized = "".join(normalized)
    data = normalized.encode("utf-8")
    char_at, position = {}, 0
    for index, char in enumerate(normalized):
        char_at[position] = index
        position += len(char.encode("utf-8"))
    char_at[position] = len(normalized)
    found = []
    for item in _ab3p_engine().get_abbrs(normalized):
        s_bytes, l_bytes = item.short_form.encode("utf-8"), item.long_form.encode("utf-8")
        s0, l0 = item.short_form_offset, item.long_form_offset
        if data[s0:s0 + len(s_bytes)] != s_bytes or data[l0:l0 + len(l_bytes)] != l_bytes:
            # Ab3P lost its place (it rewrites some characters, e.g. "H_RG364P16" -> "H-RG364P16",
            # and then reports offsets into its own copy): the closest pair of the two in the text
            located = _closest_pair(data, s_bytes, l_bytes)
            if located is None:
                warnings.warn(f"Ab3P's pair {item.short_form!r} / {item.long_form!r} is not in the text: left out",
                              stacklevel=2)
                continue
            s0, l0 = located
        spans = []
        for start, size in ((s0, len(s_bytes)), (l0, len(l_bytes))):
            first, end = char_at[start], char_at[start + size]
            spans += [origin[first], origin[end - 1] + 1]
        found.append(Abbreviation(text[spans[0]:spans[1]], text[spans[2]:spans[3]], *spans))
    return found
