"""word_diff: precise word-level spans, exact re-assembly, and speed on huge texts."""

from __future__ import annotations

import random
import time

import pytest

from pairscope.widgets.text_diff import Span, changed_fragments, coarsen, word_diff


def check_cover(text: str, spans: list[Span]) -> None:
    """Spans are contiguous, non-empty, merged (alternating) and re-assemble the text."""
    assert "".join(text[s.start : s.end] for s in spans) == text
    position = 0
    for i, span in enumerate(spans):
        assert span.start == position < span.end
        if i:
            assert span.changed != spans[i - 1].changed
        position = span.end
    assert position == len(text)


def diff(a: str, b: str) -> tuple[list[str], list[str]]:
    sa, sb = word_diff(a, b)
    check_cover(a, sa)
    check_cover(b, sb)
    return changed_fragments(a, sa), changed_fragments(b, sb)


def test_numbers_differ_precisely():
    assert diff("There are 3 sinks.", "There are 2 sinks.") == (["3"], ["2"])
    assert diff("about 3.5 m", "about 3.6 m") == (["3.5"], ["3.6"])
    assert diff("a 1 b 1 c 1 d", "a 1 b 2 c 1 d") == (["1"], ["2"])


def test_short_tokens_and_punctuation():
    assert diff("Yes, it is red.", "No, it is red!") == (["Yes", "."], ["No", "!"])
    assert diff("A cat.", "A dog.") == (["cat"], ["dog"])


def test_adjacent_changed_words_merge_into_one_span():
    assert diff("a big red ball", "a small blue ball") == (["big red"], ["small blue"])


def test_a_change_never_spans_a_line_break():
    assert diff("keep\nred apple\nblue sky\nend", "keep\ngreen pear\ngray cloud\nend") == (
        ["red apple", "blue sky"],
        ["green pear", "gray cloud"],
    )


def test_insertion_and_deletion():
    assert diff("the cat sat", "the black cat sat") == ([], ["black"])
    assert diff("the black cat sat", "the cat sat") == (["black"], [])


def test_empty_and_identical():
    assert word_diff("", "") == ([], [])
    assert word_diff("same text", "same text") == ([Span(0, 9, False)], [Span(0, 9, False)])
    assert diff("", "two words") == ([], ["two words"])
    assert diff("  padded  ", "") == (["padded"], [])


def test_whitespace_only_changes_are_not_reported():
    assert diff("a  b\nc", "a b c") == ([], [])
    assert diff("one two", "  one two  ") == ([], [])


def test_completely_different():
    assert diff("alpha beta", "gamma delta") == (["alpha beta"], ["gamma delta"])


def test_multiline_and_unicode():
    a = "Línea uno.\nThe 2 dogs — brown.\nLast line"
    b = "Línea uno.\nThe 3 dogs — brown.\nLast line"
    assert diff(a, b) == (["2"], ["3"])
    assert diff("日本 text", "中国 text") == (["日本"], ["中国"])


def _text(rng: random.Random, words: int, newline_every: int | None) -> str:
    vocab = ["".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(1, 8))) for _ in range(2000)]
    vocab += ["the", "a", "of", "3", "."]
    weights = [1 / (i + 1) for i in range(len(vocab))]  # Zipf-like, as in real text
    out = []
    for i, word in enumerate(rng.choices(vocab, weights, k=words)):
        out.append(word + (".\n" if newline_every and i % newline_every == newline_every - 1 else " "))
    return "".join(out)


@pytest.mark.parametrize("newline_every", [None, 30], ids=["one-line", "lines"])
def test_100k_characters_is_precise(newline_every):
    rng = random.Random(7)
    a = _text(rng, 19_000, newline_every)
    assert len(a) >= 100_000
    words = a.split(" ")
    edited = sorted(rng.sample(range(1, len(words) - 1), 25))
    for i in edited:
        words[i] = f"EDIT{i}"
    b = " ".join(words)
    started = time.perf_counter()
    fa, fb = diff(a, b)
    elapsed = time.perf_counter() - started
    print(f"\nword_diff near-identical 2x{len(a):,} chars ({newline_every=}): {elapsed * 1000:.0f} ms")
    assert fb == [words[i] for i in edited]
    assert len(fa) == 25  # the time is a benchmark's (bench/render_bench.py), not an assertion here


@pytest.mark.parametrize("newline_every", [None, 30], ids=["one-line", "lines"])
def test_100k_completely_different_covers_everything(newline_every):
    rng = random.Random(3)
    a, b = _text(rng, 19_000, newline_every), _text(rng, 19_000, newline_every)
    started = time.perf_counter()
    sa, sb = word_diff(a, b)
    elapsed = time.perf_counter() - started
    print(f"\nword_diff different 2x{len(a):,} chars ({newline_every=}): {elapsed * 1000:.0f} ms")
    check_cover(a, sa)
    check_cover(b, sb)
    assert sum(s.end - s.start for s in sa if s.changed) > len(a) * 0.8


def test_100k_without_any_whitespace():
    a, b = "x" * 100_000, "x" * 50_000 + "y" + "x" * 49_999
    assert diff(a, b) == ([a], [b])  # one token each: the whole word changed


# --- at most N highlighted spans (issue 16, point 5: rendering has a budget) ----------------


def test_coarsen_merges_the_closest_changes_and_keeps_every_change():
    rng = random.Random(2)
    a = " ".join(f"w{i}" for i in range(5_000))
    words = a.split(" ")
    for i in range(0, len(words), 3):  # every third word differs: ~1,700 separate changes
        words[i] = f"X{rng.randint(0, 9)}"
    sa, _ = word_diff(a, " ".join(words))
    assert sum(s.changed for s in sa) > 1_000
    coarse = coarsen(sa, 100)
    check_cover(a, coarse)
    assert 0 < sum(s.changed for s in coarse) <= 100
    covered = {i for s in coarse if s.changed for i in range(s.start, s.end)}
    assert all(i in covered for s in sa if s.changed for i in range(s.start, s.end))


def test_coarsen_leaves_few_spans_alone():
    sa, _ = word_diff("a big red ball", "a small blue ball")
    assert coarsen(sa, 100) == sa
    assert coarsen([], 5) == []
