"""Verdict parsing on realistic judge outputs: what counts, what is refused, and where it is."""

from __future__ import annotations

import pytest

from pairscope.models.parsing import (
    PairwiseVerdict,
    parse_pairwise,
    parse_pairwise_strict,
    parse_score,
    parse_step_scores,
    rationale,
)

REASONING = (
    "Answer 1 claims there are three dogs on the lawn, but the image shows two dogs and a cat. "
    "Answer 2 counts two dogs correctly and mentions the cat."
)

# (judge output, n_answers, expected (choice, tie, parsed))
PAIRWISE = [
    pytest.param(f"{REASONING}\n\nOverall Judgment: Answer 2 is better", 2, (1, False, True), id="plain"),
    pytest.param(f"{REASONING}\n\n**Overall Judgment**: **Answer 2** is better.", 2, (1, False, True), id="bold"),
    pytest.param(f"{REASONING}\n\n*Overall Judgment:* *Answer 1 is better*", 2, (0, False, True), id="italics"),
    pytest.param("### Overall Judgment: Answer 1 is better", 2, (0, False, True), id="heading"),
    pytest.param("overall judgment: answer 1 is better", 2, (0, False, True), id="lowercase"),
    pytest.param("OVERALL JUDGMENT: ANSWER 2 IS BETTER", 2, (1, False, True), id="uppercase"),
    pytest.param("Overall Judgement: Answer 2 is better", 2, (1, False, True), id="judgement-spelling"),
    pytest.param(
        "Overall Judgment: Answer 2 is better because it does not invent a third dog.",
        2,
        (1, False, True),
        id="reason-after-verdict",
    ),
    pytest.param(
        "Overall Judgment: Answer 1 is better than Answer 2, which miscounts.",
        2,
        (0, False, True),
        id="better-than",
    ),
    pytest.param(
        f"{REASONING}\nOverall Judgment: Answer 2 is better\n\nNote: if the cat were hidden, Answer 1 might be better.",
        2,
        (1, False, True),
        id="postscript",
    ),
    pytest.param(
        "Answer 1 is detailed and Answer 2 is short; Answer 1 is better written, but Answer 2 is "
        "accurate.\nOverall Judgment: Answer 2 is better",
        2,
        (1, False, True),
        id="both-in-reasoning",
    ),
    pytest.param(
        "Overall Judgment: Answer 1 is better\nWait, let me recount the dogs: there are two.\n"
        "Overall Judgment: Answer 2 is better",
        2,
        (1, False, True),
        id="last-verdict-wins",
    ),
    pytest.param(
        "Overall Judgment: Answer 2 is better\nOn reflection the cat is a shadow.\nFinal verdict: Answer 1",
        2,
        (0, False, True),
        id="last-label-differs",
    ),
    pytest.param("**Overall Judgment:**\nAnswer 1 is better.", 2, (0, False, True), id="label-then-next-line"),
    pytest.param(f"{REASONING}\n\n[[B]]", 2, (1, False, True), id="bracket-B"),
    pytest.param("Assistant A is more accurate.\n\nFinal Verdict: [[A]]", 2, (0, False, True), id="bracket-A"),
    pytest.param("[[B>A]]", 2, (1, False, True), id="arena-B>A"),
    pytest.param("My final verdict is: [[A>>B]]", 2, (0, False, True), id="arena-A>>B"),
    pytest.param("[[A<B]]", 2, (1, False, True), id="arena-A<B"),
    pytest.param("Both are equally wrong.\n[[A=B]]", 2, (None, True, True), id="arena-tie"),
    pytest.param("Final verdict: [[C]]", 2, (None, True, True), id="mtbench-C-tie"),
    pytest.param("Final verdict: [[C]]", 3, (2, False, True), id="C-is-answer-3-of-3"),
    pytest.param(f"{REASONING}\nOverall Judgment: Tie", 2, (None, True, True), id="tie-label"),
    pytest.param("Both answers miss the cat.\nTie.", 2, (None, True, True), id="tie-alone"),
    pytest.param(
        "Neither Answer 1 nor Answer 2 is better; both miss the cat. It's a tie.",
        2,
        (None, True, True),
        id="tie-sentence",
    ),
    pytest.param("Both answers are equally accurate.", 2, (None, True, True), id="equally-accurate"),
    pytest.param(
        "Overall Judgment: Tie, Answer 1 and Answer 2 are equally good",
        2,
        (None, True, True),
        id="tie-naming-both",
    ),
    pytest.param(
        "Overall Judgment: Answer 2, as the dog counts are not equal",
        2,
        (1, False, True),
        id="equal-not-a-tie",
    ),
    pytest.param(f"{REASONING} Therefore, Answer 2 is better.", 2, (1, False, True), id="final-sentence"),
    pytest.param(f"{REASONING}\n\nResponse 2 is better.", 2, (1, False, True), id="response-k"),
    pytest.param(f"{REASONING}\n\nI prefer Answer 2.", 2, (1, False, True), id="prefer"),
    pytest.param("Answer 1 is worse than Answer 2 here.", 2, (1, False, True), id="worse"),
    pytest.param(f"{REASONING}\n\nFinal answer: 2", 2, (1, False, True), id="final-answer"),
    pytest.param(f"{REASONING}\n\nThe better answer is \\boxed{{2}}.", 2, (1, False, True), id="boxed"),
    pytest.param("\\boxed{\\text{Answer 1}}", 2, (0, False, True), id="boxed-text"),
    pytest.param(
        "Summing, the total is \\boxed{12} apples. Overall, Answer 1 is better.",
        2,
        (0, False, True),
        id="boxed-math-result-ignored",
    ),
    pytest.param("Overall Judgment: Answer 3 is better", 4, (2, False, True), id="four-answers-3"),
    pytest.param("Answer 4 is the best of the four.", 4, (3, False, True), id="four-answers-best"),
    pytest.param("Overall Judgment: Response C is better", 4, (2, False, True), id="letter-C-of-4"),
    pytest.param("Overall Judgment: the second answer is better", 2, (1, False, True), id="ordinal"),
    # --- refused -------------------------------------------------------------------------
    pytest.param("", 2, (None, False, False), id="empty"),
    pytest.param("   \n\n  ", 2, (None, False, False), id="blank"),
    pytest.param(
        "Answer 2 is better at counting, but I need to look at the colours again. Both describe a lawn.",
        2,
        (None, False, False),
        id="claim-mid-reasoning-only",
    ),
    pytest.param(
        "Answer 2 is better. Answer 1 misses the cat.",
        2,
        (None, False, False),
        id="claim-not-in-final-sentence",
    ),
    pytest.param("There are 2 dogs and 1 cat; answer 1 says 3 dogs.", 2, (None, False, False), id="numbers-only"),
    pytest.param("Overall Judgment: Answer 3 is better", 2, (None, False, False), id="out-of-range"),
    pytest.param("[[D]]", 2, (None, False, False), id="bracket-out-of-range"),
    pytest.param("Overall Judgment: Answer 0 is better", 2, (None, False, False), id="answer-zero"),
    pytest.param(
        "Answer 1 is better on colour, while Answer 2 is better on counting.",
        2,
        (None, False, False),
        id="final-sentence-both-better",
    ),
    pytest.param("Overall Judgment: Answer 1 and Answer 2 both help", 2, (None, False, False), id="verdict-names-both"),
    pytest.param("Overall Judgment: Answer 1 is better [[B]]", 2, (None, False, False), id="line-contradicts-itself"),
    pytest.param(
        "Overall Judgment: Answer 2 is better\nHmm.\nOverall Judgment: it depends on the lighting",
        2,
        (None, False, False),
        id="last-verdict-unreadable",
    ),
    pytest.param("Overall Judgment: Answer X is better", 2, (None, False, False), id="echoed-placeholder"),
    pytest.param("The man in the photo wears a red tie.", 2, (None, False, False), id="necktie-is-not-a-tie"),
    pytest.param("Overall Judgment:", 2, (None, False, False), id="empty-verdict-line"),
    pytest.param("I would not choose Answer 1.", 2, (None, False, False), id="negated-choice"),
    pytest.param(f"{REASONING}\nAnswer: 2", 2, (1, False, True), id="answer-colon-last-line"),
    pytest.param(f"{REASONING}\n\n**Answer:** 1\n", 2, (0, False, True), id="answer-colon-bold"),
    pytest.param("Both miss the cat.\nResponse: B", 2, (1, False, True), id="response-colon-letter"),
    pytest.param("Both miss the cat.\nAnswer: Tie", 2, (None, True, True), id="answer-colon-tie"),
    pytest.param("Overall Judgment: Answer 1 is better\nAnswer: 2", 2, (1, False, True), id="answer-colon-is-last"),
    pytest.param("There are four apples.\nAnswer: 4", 2, (None, False, False), id="answer-colon-count-not-position"),
    pytest.param("Answer: 2\nThe second counts the dogs.", 2, (None, False, False), id="answer-colon-not-last"),
    pytest.param("Answer 1: three dogs.\nAnswer 2: two dogs.", 2, (None, False, False), id="answers-summarised"),
    pytest.param("Answer 2", 2, (1, False, True), id="whole-output-answer"),
    pytest.param("  **B**\n", 2, (1, False, True), id="whole-output-letter"),
    pytest.param("Tie.", 2, (None, True, True), id="whole-output-tie"),
    pytest.param("Answer 3", 2, (None, False, False), id="whole-output-out-of-range"),
]


@pytest.mark.parametrize(("text", "n", "expected"), PAIRWISE)
def test_pairwise_table(text, n, expected):
    verdict = parse_pairwise(text, n)
    assert (verdict.choice, verdict.tie, verdict.parsed) == expected, verdict
    assert verdict.reason
    if verdict.parsed:
        assert verdict.span is not None


#: The verdict formats docs/JUDGE.md and DESIGN.md promise, each beside a near miss that must be
#: refused (another answer number, a contradiction, a word that only looks like a verdict).
DOCUMENTED_FORMATS = [
    ("Overall Judgment: Answer 2 is better", (1, False), "Overall Judgment: Answer 3 is better"),
    ("[[A]]", (0, False), "[[D]]"),
    ("[[B]]", (1, False), "Overall Judgment: Answer 1 is better [[B]]"),
    ("[[A>>B]]", (0, False), "[[D>>A]]"),
    ("[[A=B]]", (None, True), "Overall Judgment: [[A=B]] and [[A>B]]"),
    ("Overall Judgment: Tie", (None, True), "The man in the photo wears a red tie."),
]


@pytest.mark.parametrize(("text", "expected", "near_miss"), DOCUMENTED_FORMATS)
def test_every_documented_format_reads_and_its_near_miss_is_refused(text, expected, near_miss):
    verdict = parse_pairwise(text, 2)
    assert (verdict.choice, verdict.tie, verdict.parsed) == (*expected, True)
    assert any(text.lower() in p.values[0].lower() for p in PAIRWISE)  # and the table holds it in context
    refused = parse_pairwise(near_miss, 2)
    assert not refused.parsed, (near_miss, refused)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty output"),
        ("Answer 2 is better. Answer 1 misses the cat.", "no verdict line"),
        ("Overall Judgment: Answer 1 and Answer 2 both help", "ambiguous: both answers named"),
        ("Answer 1 is better on colour, while Answer 2 is better on counting.", "ambiguous: both answers named"),
        ("Overall Judgment: Answer 3 is better", "answer 3 out of range for 2 answers"),
        ("[[D]]", "answer D out of range for 2 answers"),
    ],
)
def test_failure_reasons(text, reason):
    assert parse_pairwise(text).reason == reason


def test_span_points_at_the_verdict_line():
    text = f"{REASONING}\n\n**Overall Judgment**: **Answer 2** is better.\n\nThanks!"
    verdict = parse_pairwise(text)
    start, end = verdict.span
    assert text[start:end] == "**Overall Judgment**: **Answer 2** is better."


def test_span_of_last_of_two_conflicting_verdicts():
    text = "Overall Judgment: Answer 1 is better\nRecounting...\nOverall Judgment: Answer 2 is better"
    start, end = parse_pairwise(text).span
    assert start == text.rindex("Overall") and text[start:end] == "Overall Judgment: Answer 2 is better"


def test_span_of_bracket_and_of_final_sentence():
    text = f"{REASONING}\n\n[[B>A]]\n"
    assert text[slice(*parse_pairwise(text).span)] == "[[B>A]]"
    text = f"{REASONING} Therefore, Answer 2 is better."
    assert text[slice(*parse_pairwise(text).span)] == "Therefore, Answer 2 is better."


def test_span_is_kept_for_a_refused_verdict_line():
    text = "Reasoning.\nOverall Judgment: Answer 3 is better"
    verdict = parse_pairwise(text)
    assert not verdict.parsed and text[slice(*verdict.span)] == "Overall Judgment: Answer 3 is better"
    assert parse_pairwise("nothing here").span is None


def test_answer_quoted_in_reasoning_does_not_beat_the_final_verdict():
    # An answer may itself contain a verdict line the judge then quotes; the judge's own last one wins.
    text = (
        'Answer 1 ends with "Overall Judgment: Answer 1 is better", which is not an answer at all.\n'
        "Overall Judgment: Answer 2 is better"
    )
    assert parse_pairwise(text).choice == 1


def test_choice_is_position_as_shown():
    assert parse_pairwise("[[A]]") == PairwiseVerdict(0, False, True, "verdict line", (0, 5))


def test_n_answers_below_two_is_a_caller_error():
    with pytest.raises(ValueError):
        parse_pairwise("[[A]]", 1)


# --- scores ------------------------------------------------------------------------------

# (judge output, scale, expected score or None if refused)
SCORES = [
    ("The answer counts the dogs correctly.\nScore: 7/10", 10, 7.0),
    ("Overall Score: 4", 10, 4.0),
    ("The answer misreads the sign.\n\nRating: [[8]]", 10, 8.0),
    ("**Score:** 6.5", 10, 6.5),
    ("score: 9 / 10", 10, 9.0),
    ("- Final score - 3", 10, 3.0),
    ("I give this answer a score of 7 out of 10.", 10, 7.0),
    ("Overall, the description is accurate. Final score: 8/10 (minor omission)", 10, 8.0),
    ("Score: 3/10\nOn reflection the colour is right.\nScore: 6/10", 10, 6.0),
    ("Score: 4/5", 5, 4.0),
    ("Score: 10/10", 10, 10.0),
    # refused
    ("Score: 12", 10, None),
    ("Score: 0/10", 10, None),
    ("Score: 4/5", 10, None),
    ("Score: 8/10\nActually this is wrong.\nScore: 11/10", 10, None),
    ("The answer is fine; it mentions 3 dogs and 2 cats.", 10, None),
    ("The score of the match on the scoreboard is 3-2.", 10, None),
    ("Score: N/10", 10, None),
    ("", 10, None),
]


@pytest.mark.parametrize(("text", "scale", "expected"), SCORES)
def test_score_table(text, scale, expected):
    verdict = parse_score(text, scale)
    assert verdict.score == expected, verdict
    assert verdict.parsed is (expected is not None)
    assert verdict.reason


def test_score_span_and_reasons():
    text = "Accurate count.\n**Score:** 7/10\n"
    verdict = parse_score(text)
    assert text[slice(*verdict.span)] == "**Score:** 7/10"
    assert parse_score("Score: 12").reason == "score 12 out of range 1–10"
    assert parse_score("Score: 4/5").reason == "score 4/5 is not out of 10"
    assert parse_score("no number").reason == "no score line"
    assert parse_score("Score: 0", minimum=0).score == 0.0


# --- step scores ---------------------------------------------------------------------------

# (judge output, n_steps, expected scores, parsed)
STEPS = [
    ("Step 2 misreads the axis.\nStep 1: 5\nStep 2: 2\nStep 3: 4", 3, (5, 2, 4), True),
    ("Step 1 - 4/5\nStep 2 - 3/5", 2, (4, 3), True),
    ("Step 1: score 4\nStep 2: score 1", 2, (4, 1), True),
    ("**Step 1:** 5 (correct)\n**Step 2:** 2 - wrong count", 2, (5, 2), True),
    ("- Step 1: 4.\n- Step 2: 3, a small slip", 2, (4, 3), True),
    ("Step 1 score: 5\nStep 2 rating: 4", 2, (5, 4), True),
    ("Step 1: 3\nStep 2: 3\nOn reflection:\nStep 1: 5", 2, (5, 3), True),
    ("Step 1: [[4]]\nStep 2: [[2]]", 2, (4, 2), True),
    # refused
    ("Step 1: 3 apples are visible in the image.\nStep 2: 4", 2, (None, 4), False),
    ("Step 1: 5\nStep 2: 4", 3, (5, 4, None), False),
    ("Step 1: 5\nStep 2: 7", 2, (5, None), False),
    ("Step 1: 4\nStep 2: 3.5", 2, (4, None), False),
    ("Step 1: 4/10\nStep 2: 3/5", 2, (None, 3), False),
    ("Step 1: 4\nStep 2: 3\nStep 3: 5", 2, (4, 3), False),
    ("Step 12 - 4\nStep 1: 2", 2, (2, None), False),
    ("All steps look right to me.", 2, (None, None), False),
    ("", 1, (None,), False),
]


@pytest.mark.parametrize(("text", "n", "scores", "parsed"), STEPS)
def test_step_table(text, n, scores, parsed):
    verdict = parse_step_scores(text, n)
    assert (verdict.scores, verdict.parsed) == (scores, parsed), verdict
    assert verdict.reason


def test_step_reasons_and_span():
    assert parse_step_scores("Step 1: 5\nStep 2: 4", 3).reason == "no score for step 3"
    assert parse_step_scores("Step 1: 5\nStep 2: 7", 2).reason == "step 2 score 7 out of range 1–5"
    assert parse_step_scores("Step 1: 4\nStep 2: 3\nStep 3: 5", 2).reason == "step 3 out of range for 2 steps"
    text = "Step 2 is wrong.\n\nStep 1: 5\nStep 2: 1\n"
    assert text[slice(*parse_step_scores(text, 2).span)] == "Step 1: 5\nStep 2: 1"
    assert parse_step_scores("Step 1: 9/10", 1, scale=10).scores == (9,)


# --- rationale ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"  {REASONING}\n\n**Overall Judgment**: Answer 2 is better\n", REASONING),
        (f"{REASONING}\n\n[[B]]", REASONING),
        ("Accurate, but misses the cat.\nScore: 7/10", "Accurate, but misses the cat."),
        ("Step 2 misreads the axis.\nStep 1: 5\nStep 2: 2", "Step 2 misreads the axis."),
        ("  no verdict at all  ", "no verdict at all"),
    ],
)
def test_rationale(text, expected):
    assert rationale(text) == expected


def test_rationale_with_span_from_a_parser():
    text = "Counting is off.\nOverall Judgment: Answer 1 is better\nP.S. nice image"
    assert rationale(text, parse_pairwise(text).span) == "Counting is off."


# -- memory (issue 31, item 5) ---------------------------------------------------------------------


def test_plain_positions_map_back_to_the_original_as_a_per_character_index_would(monkeypatch):
    """The markup-free view maps positions back without a list per character (it was one: 2.6 GB
    for a 50 MB output); chunk boundaries included (chunks of 7 here)."""
    import random

    from pairscope.models import parsing

    monkeypatch.setattr(parsing, "_CHUNK", 7)
    rng = random.Random(31)
    for _ in range(300):
        text = "".join(rng.choice("ab *_`\n") for _ in range(rng.randrange(0, 80)))
        plain = parsing._Plain(text)
        index = [i for i, ch in enumerate(text) if ch not in "*_`"] + [len(text)]
        assert plain.text == "".join(text[i] for i in index[:-1])
        assert [plain._origin(p) for p in range(len(index))] == index, repr(text)


@pytest.mark.parametrize(
    "shape",
    [
        pytest.param(("The answer is fine. " * 250_000) + "\nOverall Judgment: Answer 2 is better", id="prose"),
        pytest.param(
            ("**a** `b` " * 500_000) + "\nOverall Judgment: **Answer 2** is better", id="markup", marks=pytest.mark.slow
        ),
        pytest.param("x" * 5_000_000, id="one-line", marks=pytest.mark.slow),
    ],
)
def test_parsing_a_5_mb_output_takes_memory_proportional_to_it(shape):
    """Peak Python memory (tracemalloc) while parsing a 5 MB output: before, 46.6 times its size
    (a list entry per character: 233 MB; 2.6 GB for 50 MB); now at most a few copies of it."""
    import tracemalloc

    text = shape
    for parse in (parse_pairwise, parse_pairwise_strict, parse_score, lambda t: parse_step_scores(t, 3), rationale):
        tracemalloc.start()
        try:
            parse(text)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 4 * len(text), (parse, peak / len(text))


# --- strict = VL-RewardBench's official rule ------------------------------------------------

#: Copied verbatim from VL-RewardBench's official scorer, github.com/vl-rewardbench/VL_RewardBench
#: ``cal.py`` (``distribution(..., reparse=True)``); lmms-eval's ``vl_rewardbench`` task
#: (``utils.parse_pred_ans``) holds the same line. Applied as the scorer applies it:
#: ``re.search(pattern, response.replace("\n", "").replace("*", ""), re.IGNORECASE)``.
OFFICIAL_PATTERN = r"(?:Overall Judgment|Therefore)\s*.*\s*-*\s*Answer\s*(\d+)\s*is\s*(?:the\s*)?(?:slightly\s*)?better"


def official_number(text):
    """The answer number VL-RewardBench's cal.py reads from ``text``, or None (doesntMatch)."""
    import re

    match = re.search(OFFICIAL_PATTERN, text.replace("\n", "").replace("*", ""), re.IGNORECASE)
    return int(match.group(1)) if match else None


# (judge output, the number cal.py reads: worked out by hand from the pattern)
VLRB_CORPUS = [
    ("Reasons.\nOverall Judgment: Answer 1 is better.", 1),  # the official prompt's own example line
    ("Overall Judgment: Answer 2 is better", 2),
    ("**Overall Judgment:** Answer 2 is better.", 2),  # bold
    ("**Overall Judgment**: **Answer 1** is better", 1),
    ("Overall Judgment: Answer 1 is slightly better.", 1),
    ("Overall Judgment: Answer 2 is the better one.", 2),
    ("Overall Judgment:\nAnswer 2 is better.", 2),  # a line break after the colon
    ("Overall Judgment:\n\n- Answer 1 is better", 1),
    ("overall judgment: answer 2 is better", 2),  # case does not matter
    ("Therefore, Answer 1 is better than Answer 2.", 1),
    ("Therefore Answer 1 is better. On reflection, Answer 2 is better.", 2),  # the last claim after it
    ("Answer 2 is better.\nOverall Judgment: Answer 1 is better", 1),
    ("Overall Judgment: Answer 1 is better\nThanks!", 1),  # text after the verdict
    ("Overall Judgment: Answer1 is better", 1),
    ("Overall Judgment: Answer 2 isbetter", 2),  # every \s* may be empty
    ("Overall Judgment: Neither Answer 1 nor Answer 2 is better", 2),  # the rule's own reading
    ("Overall Judgment: Answer 3 is better", 3),  # read; out of range for two answers
    ("Overall Judgment: Tie", None),  # no tie in the official rule
    ("Overall Judgment: Both answers are equally good.", None),
    ("Answer 2 is better.", None),  # no "Overall Judgment" or "Therefore" before it
    ("Overall Judgment: Answer 2 is clearly better", None),  # only "the" and "slightly" may stand between
    ("Overall Judgment: Answer 2 is much better", None),
    ("[[B]]", None),
    ("Final verdict: Answer 2 is better", None),
    ("Overall Judgment: Answer 2", None),
    ("Overall Judgment: Answer two is better", None),
    ("", None),
]


@pytest.mark.parametrize(("text", "number"), VLRB_CORPUS)
def test_strict_reads_exactly_what_the_official_regex_reads(text, number):

    assert official_number(text) == number, "the hand-worked expectation disagrees with the official regex"
    verdict = parse_pairwise_strict(text, 2)
    if number in (1, 2):
        assert (verdict.choice, verdict.tie, verdict.parsed) == (number - 1, False, True)
        assert text[verdict.span[0] : verdict.span[1]].replace("*", "").replace("\n", "").lower().startswith("answer")
    else:  # doesntMatch, or a number beyond the two answers
        assert not verdict.parsed and verdict.choice is None and not verdict.tie, verdict
        assert ("out of range" in verdict.reason) == (number is not None)


def test_strict_agrees_with_the_official_regex_on_generated_outputs():
    """Thousands of outputs stitched from verdict-like fragments (bold, line breaks, several
    claims, decoys): strict's choice is the official regex's number on every one."""
    import random

    fragments = [
        "Overall Judgment", "overall judgment:", "Therefore", "**", "*", "\n", "\n\n", ": ", " ", "-", "- ",
        "Answer 1", "Answer 2", "answer 2", "Answer 3", "Answer12", " is ", "is", " the ", "slightly ", "better",
        " better.", "clearly ", "Tie", "worse", "Answer 1 is better", "Answer 2 is slightly better", "Final verdict: ",
        "[[A]]", "x", ".",
    ]  # fmt: skip
    rng = random.Random(23)
    agreed = 0
    for _ in range(3000):
        text = "".join(rng.choice(fragments) for _ in range(rng.randint(1, 14)))
        number = official_number(text)
        verdict = parse_pairwise_strict(text, 20)
        expected = number - 1 if number is not None and 1 <= number <= 20 else None
        assert (verdict.choice, verdict.parsed) == (expected, expected is not None), repr(text)
        agreed += expected is not None
    assert agreed > 300  # the corpus is not all refusals


def test_lenient_refuses_a_marker_naming_an_answer_that_was_not_shown():
    # Before: [[A>>D]] of two answers read as A, [[E=F]] and [[A=D]] as a tie.
    for text, named in (("[[A>>D]]", "answer D"), ("[[E=F]]", "answer E and answer F"), ("[[A=D]]", "answer D")):
        verdict = parse_pairwise(text, 2)
        assert not verdict.parsed and verdict.choice is None and not verdict.tie, text
        assert verdict.reason == f"{text}: {named} out of range for 2 answers"
        assert not parse_pairwise(f"Reasons.\nFinal verdict: {text}", 2).parsed
    assert parse_pairwise("[[A>>D]]", 4).choice == 0 and parse_pairwise("[[A=D]]", 4).tie
    assert parse_pairwise("[[B<<A]]", 2).choice == 0 and parse_pairwise("[[C]]", 2).tie  # MT-Bench's C stays a tie


def test_vlrmbench_indicator_lists_are_read_as_step_scores():
    """VLRMBench's output format ``[Indicator for STEP 1, …]`` (1 = the step has an error) is
    read when the judge wrote no "Step k:" lines: an error is score 1, no error the top score."""
    from pairscope.models.official_rules import step_flags_to_scores

    assert parse_step_scores("Fine except 2.\n**[0,1,0]**", 3).scores == (5, 1, 5)
    verdict = parse_step_scores("Step 2 misreads the chart.\n\n[0, 1, 0]", 3)
    assert (verdict.scores, verdict.parsed) == ((5, 1, 5), True)
    assert verdict.span == (28, 37) and "[0, 1, 0]" == "Step 2 misreads the chart.\n\n[0, 1, 0]"[28:37]
    assert parse_step_scores("[1, 0]\nfinal: [0, 0]", 2).scores == (5, 5)  # the last list wins
    assert step_flags_to_scores([1, 0, 1]) == (1, 5, 1) and step_flags_to_scores([0], scale=10) == (10,)
    short = parse_step_scores("[0, 1]", 3)
    assert not short.parsed and short.reason == "a list of 2 step indicators for 3 steps"
    assert not parse_step_scores("[0, 2, 1]", 3).parsed  # only 0/1 indicators
    lines_first = parse_step_scores("Step 1: 4\nStep 2: 2\n[1, 1]", 2)
    assert lines_first.scores == (4, 2)  # "Step k:" lines, when there are any, decide
