"""Confidence per verdict (issue 13, point 1): read from the stored log-probabilities at the
verdict token, renormalised over the allowed answers; the transformers backend's
log-probabilities equal a direct forward pass of the same model on the same tokens; the
session stores a sample's confidence; an item's confidence follows from its K samples."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import fake_backend  # noqa: F401  (registers "fake")
import tiny_models
from fake_backend import FakeBackend
from pairscope.app.judge.confidence import item_confidence, item_confidence_of, sample_confidence
from pairscope.app.judge.modes import get_mode
from pairscope.app.judge.session import JudgeConfig, JudgeSession
from pairscope.app.judge.votes import ItemVerdict
from pairscope.app.records import Item, Reference, Response
from pairscope.app.store import Store, VerdictRecord
from pairscope.models.base import Generation, JudgeRequest, create_backend
from pairscope.models.confidence import label_confidence, normalise, pairwise_confidence

# -- a scripted judge that returns log-probabilities ---------------------------------------------


def word_logprobs(text: str, verdicts: dict[str, float] | None = None) -> list[dict]:
    """The stored shape for ``text`` split into word tokens (each with its leading space). A
    token whose word is a key of ``verdicts`` gets that probability and one alternative: the
    other answer of two (``1`` ↔ ``2``, ``A`` ↔ ``B``) with the rest."""
    out = []
    for token in re.findall(r"\s*\S+|\s+", text):
        word = token.strip()
        if verdicts and word in verdicts:
            p = verdicts[word]
            other = {"1": "2", "2": "1", "A": "B", "B": "A"}[word]
            top = [{"token": token, "logprob": math.log(p)}, {"token": f" {other}", "logprob": math.log(1 - p)}]
            out.append({"token": token, "logprob": math.log(p), "top": top})
        else:
            out.append({"token": token, "logprob": -0.01, "top": [{"token": token, "logprob": -0.01}]})
    return out


class LogprobBackend(FakeBackend):
    """FakeBackend whose generations carry log-probabilities: ``confidence(request)`` is the
    probability given to the answer named in ``Answer N`` (None: no log-probabilities)."""

    def __init__(self, model_path="fake-logprobs", script=None, confidence=None, **options):
        super().__init__(model_path, script, **options)
        self.confidence = confidence or (lambda request: 0.9)

    def generate(self, requests, cancel=None):
        out = []
        for request, gen in zip(requests, super().generate(requests, cancel)):
            p = self.confidence(request)
            m = re.search(r"Answer (\d)", gen.text)
            logprobs = word_logprobs(gen.text, {m[1]: p} if m else None) if p is not None else None
            out.append(Generation(gen.text, gen.tokens_in, gen.tokens_out, gen.latency_s, logprobs=logprobs))
        return out

    def describe(self):
        return {**super().describe(), "model_path": self.model_path}


# -- reading the verdict token ------------------------------------------------------------------


def test_confidence_is_the_verdict_tokens_probability_renormalised_over_the_answers():
    text = "Answer 1 misses the cup.\nOverall Judgment: Answer 2 is better"
    span = (text.index("Overall"), len(text))
    logprobs = word_logprobs(text)
    verdict = next(e for e in logprobs[::-1] if e["token"] == " 2")
    verdict["logprob"] = math.log(0.6)
    verdict["top"] = [
        {"token": " 2", "logprob": math.log(0.6)},
        {"token": " 1", "logprob": math.log(0.2)},
        {"token": " the", "logprob": math.log(0.1)},  # not an answer: left out
        {"token": "2", "logprob": math.log(0.05)},  # the same answer without its space: counted
    ]
    assert pairwise_confidence(logprobs, text, span, 1, 2) == pytest.approx(0.65 / 0.85)
    # The first "Answer 1" is outside the verdict span and never read.
    assert pairwise_confidence(logprobs, text, span, 0, 2) is None  # span names 2, not 1


def test_letters_markup_and_ordinals_are_answer_forms():
    text = "Verdict: **[[B]]**"
    logprobs = [
        {"token": "Verdict:", "logprob": 0.0, "top": []},
        {"token": " **[[", "logprob": 0.0, "top": []},
        {"token": "B", "logprob": math.log(0.7), "top": [{"token": "A", "logprob": math.log(0.1)}]},
        {"token": "]]**", "logprob": 0.0, "top": []},
    ]
    assert pairwise_confidence(logprobs, text, (0, len(text)), 1, 2) == pytest.approx(0.7 / 0.8)
    text = "I prefer the second one"
    tokens = [{"token": t, "logprob": -0.1, "top": []} for t in ("I", " prefer", " the", " second", " one")]
    tokens[3]["top"] = [{"token": " first", "logprob": math.log(0.25)}]
    assert pairwise_confidence(tokens, text, (0, len(text)), 1, 2) == pytest.approx(
        math.exp(-0.1) / (math.exp(-0.1) + 0.25)
    )
    assert normalise(" **b.") == "B"


def test_no_confidence_where_it_cannot_be_read():
    text = "Overall Judgment: Answer 2nd"
    tokens = [{"token": t, "logprob": -0.1, "top": []} for t in ("Overall", " Judgment:", " Answer", " 2nd")]
    assert pairwise_confidence(tokens, text, (0, len(text)), 1, 2) is None  # the label is not a token of its own
    assert pairwise_confidence(None, text, (0, len(text)), 1, 2) is None
    assert pairwise_confidence([], text, (0, len(text)), 1, 2) is None
    # the top list has only the chosen answer: the other answers count 0
    tokens = word_logprobs("Overall Judgment: Answer 2 is better")
    assert pairwise_confidence(tokens, "Overall Judgment: Answer 2 is better", (0, 36), 1, 2) == 1.0
    # tokens that do not join to the text are aligned on the verdict span
    text = "<think>…</think>Overall Judgment: Answer 2 is better"
    shifted = word_logprobs("Overall Judgment: Answer 2 is better", {"2": 0.8})
    span = (text.index("Overall"), len(text))
    assert pairwise_confidence(shifted, text, span, 1, 2) == pytest.approx(0.8)
    # a stored −∞ comes back as null
    entry = {"token": " 1", "logprob": -0.5, "top": [{"token": " 2", "logprob": None}]}
    assert label_confidence(entry, ["1", "2"], 0) == 1.0


def test_sample_confidence_by_mode():
    item = Item(ext_id="x", prompt="q", responses=(Response(0, "a"), Response(1, "b")))
    pairwise, pointwise = get_mode("pairwise"), get_mode("pointwise")
    text = "Overall Judgment: Answer 1 is better"
    gen = Generation(text, logprobs=word_logprobs(text, {"1": 0.75}))
    order = (1, 0)  # Answer 1 is response 1
    parsed = pairwise.parse(text, item, order)
    assert parsed.choice == 1 and sample_confidence(pairwise, parsed, gen, order) == pytest.approx(0.75)
    tie = "Overall Judgment: Tie"
    assert sample_confidence(pairwise, pairwise.parse(tie, item, order), Generation(tie, logprobs=[]), order) is None
    score = "Score: 7/10"
    parsed = pointwise.parse(score, item, (0,))
    assert sample_confidence(pointwise, parsed, Generation(score, logprobs=word_logprobs(score)), (0,)) is None
    assert sample_confidence(pairwise, pairwise.parse(text, item, order), Generation(text), order) is None
    failed = Generation(text, error="boom", logprobs=word_logprobs(text, {"1": 0.75}))
    assert sample_confidence(pairwise, pairwise.parse(text, item, order), failed, order) is None


# -- the transformers backend: its log-probabilities are the model's ----------------------------


@pytest.fixture(scope="module")
def tiny_judge(tmp_path_factory):
    folder = tiny_models.build_tiny_qwen2_vl(tmp_path_factory.mktemp("models") / "tiny-qwen2-vl")
    judge = create_backend(
        "transformers", model=str(folder), device="cpu", top_logprobs=tiny_models.VOCAB_SIZE, batch_size=2
    )
    yield judge
    judge.close()


def _forward_logprobs(judge, request: JudgeRequest, generated: list[int]):
    """log-softmax of the model's logits at every generated position, from one forward pass
    over the prompt plus the generated tokens (no generate, no cache)."""
    import torch

    inputs, _ = judge._encode([request])
    ids = torch.cat([inputs["input_ids"], torch.tensor([generated])], dim=1)
    with torch.inference_mode():
        logits = judge.model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[0].float()
    start = inputs["input_ids"].shape[1] - 1
    return torch.log_softmax(logits[start : start + len(generated)], dim=-1)


def _token_ids(judge, request: JudgeRequest) -> list[int]:
    """The ids the backend generates for ``request`` alone (greedy: batched output equals it,
    tests/test_transformers_backend.py), through its own generate options."""
    import threading

    import torch

    inputs, _ = judge._encode([request])
    with torch.inference_mode():
        out = judge.model.generate(**inputs, **judge._generate_kwargs(request, [threading.Event()], None))
    return out[0, inputs["input_ids"].shape[1] :].tolist()


def test_transformers_logprobs_and_confidence_equal_a_forward_pass(tiny_judge):
    requests = [
        JudgeRequest(prompt="Which answer is better? Answer 1 or Answer 2.", max_new_tokens=12),
        JudgeRequest(prompt="Score: 7/10. The rationale is clear.", max_new_tokens=12),
    ]
    batched = tiny_judge.generate(requests)  # left-padded batch of two
    for request, gen in zip(requests, batched):
        assert gen.logprobs is not None and len(gen.logprobs) == gen.tokens_out
        assert "".join(e["token"] for e in gen.logprobs) == gen.text
        ids = _token_ids(tiny_judge, request)[: gen.tokens_out]
        assert tiny_judge.tokenizer.decode(ids, skip_special_tokens=True) == gen.text
        direct = _forward_logprobs(tiny_judge, request, ids)
        vocab = tiny_judge.tokenizer.batch_decode([[i] for i in range(direct.shape[1])])
        for t, entry in enumerate(gen.logprobs):
            assert entry["logprob"] == pytest.approx(float(direct[t, ids[t]]), abs=2e-4)
            assert len(entry["top"]) == direct.shape[1]  # top_logprobs = the whole vocabulary here
            best = direct[t].topk(3)
            assert [a["logprob"] for a in entry["top"][:3]] == pytest.approx(best.values.tolist(), abs=2e-4)
            assert [a["token"] for a in entry["top"][:3]] == [vocab[i] for i in best.indices.tolist()]
        # Confidence at a generated token between its own label and another token's label:
        # the renormalised probability, summing every vocabulary token of each label.
        t = next(t for t, e in enumerate(gen.logprobs) if normalise(e["token"]))
        chosen = normalise(gen.logprobs[t]["token"])
        other = next(normalise(v) for v in vocab if normalise(v) and normalise(v) != chosen)
        probs = direct[t].exp()
        mass = [sum(float(probs[i]) for i, v in enumerate(vocab) if normalise(v) == label) for label in (chosen, other)]
        value = label_confidence(gen.logprobs[t], [chosen, other], 0)
        assert value == pytest.approx(mass[0] / sum(mass), abs=1e-4)
    # Streaming records the same log-probabilities as the batch (one request alone).
    alone = tiny_judge.generate([requests[0]])[0]
    streamed = tiny_judge.generate_stream(requests[0], lambda chunk: None)
    assert streamed.text == alone.text
    assert [e["token"] for e in streamed.logprobs] == [e["token"] for e in alone.logprobs]
    assert [e["logprob"] for e in streamed.logprobs] == pytest.approx([e["logprob"] for e in alone.logprobs], abs=1e-5)


def test_logprobs_can_be_turned_off(tmp_path):
    folder = tiny_models.build_tiny_llava(tmp_path / "tiny-llava")
    judge = create_backend("transformers", model=str(folder), device="cpu", top_logprobs=0)
    try:
        gen = judge.generate([JudgeRequest(prompt="Answer 1 or Answer 2?", max_new_tokens=4)])[0]
        assert gen.error is None and gen.logprobs is None and judge.describe()["logprobs"] is False
    finally:
        judge.close()


# -- stored with the sample; an item's confidence ----------------------------------------------


def _two_items(n: int = 3) -> list[Item]:
    return [
        Item(
            ext_id=f"i{k}",
            prompt=f"Question {k}",
            responses=(Response(0, f"GOOD {k}"), Response(1, f"BAD {k}")),
            reference=Reference(ranking=(0, 1)),
        )
        for k in range(n)
    ]


def test_the_session_stores_each_samples_confidence(tmp_path):
    with Store.create(tmp_path / "p.pairscope") as store:
        store.add_items(_two_items())
        ids = [s.id for s in store.item_summaries(0, 10)]
        backend = LogprobBackend(confidence=lambda r: 0.8 if "Question 0" in r.prompt else None)
        session = JudgeSession(store, backend, JudgeConfig(k=1))
        session.judge(ids)
        stored = {v.item_id: v for v in store.verdicts(session.run.id)}
        assert stored[ids[0]].confidence == pytest.approx(0.8) and stored[ids[0]].logprobs
        assert stored[ids[1]].confidence is None and stored[ids[1]].logprobs is None  # no log-probabilities: n/a


def test_item_confidence_is_the_mean_probability_given_to_the_official_decision():
    nan = np.nan
    decision = np.array([0.0, 1.0, nan, 2.0, 0.0])
    choices = np.array(
        [
            [0, 0, 1],  # two responses: 0.9, 0.7 and a dissent at 0.6 → (0.9 + 0.7 + 0.4) / 3
            [1, nan, 1],  # an unparsed sample has no confidence: (0.8 + 0.6) / 2
            [0, 1, nan],  # no decision: none
            [2, 0, 2],  # three responses: a dissent gives the decision 0 → (0.5 + 0 + 0.7) / 3
            [0, 0, 0],  # no confidence at all: none
        ]
    )
    conf = np.array(
        [[0.9, 0.7, 0.6], [0.8, nan, 0.6], [0.9, 0.9, nan], [0.5, 0.9, 0.7], [nan, nan, nan]],
    )
    got = item_confidence(decision, choices, conf, np.array([2, 2, 2, 3, 2]))
    assert got[:2] == pytest.approx([2.0 / 3, 0.7])
    assert np.isnan(got[2]) and np.isnan(got[4])
    assert got[3] == pytest.approx(0.4)
    assert np.isnan(item_confidence(decision, choices, None, np.array([2] * 5))).all()
    # one item from its stored records gives the same number
    samples = [
        VerdictRecord(1, 7, s, (0, 1), "", c, None, True, None, confidence=p)
        for s, (c, p) in enumerate([(0, 0.9), (0, 0.7), (1, 0.6)])
    ]
    verdict = ItemVerdict.from_votes(7, [0, 0, 1], False)
    assert item_confidence_of(verdict, samples, 2) == pytest.approx(2.0 / 3)
    assert item_confidence_of(None, samples, 2) is None


def test_a_reparse_reads_confidence_again_from_the_stored_log_probabilities(tmp_path):
    """A derived run's samples carry the confidence of the verdict *its* parser read, not a
    copy of the source run's."""
    import math

    from helpers import fake_run
    from pairscope.app.judge.derived import reparse
    from pairscope.app.judge.results import record_verdicts
    from pairscope.app.records import Item, Reference, Response
    from pairscope.app.store import Store, VerdictRecord

    def tok(text, p, other=None):
        top = [{"token": text, "logprob": math.log(p)}]
        if other:
            top.append({"token": other[0], "logprob": math.log(other[1])})
        return {"token": text, "logprob": math.log(p), "top": top}

    logprobs = [tok("Response", 0.99), tok(" 2", 0.8, (" 1", 0.2)), tok(" is", 0.9), tok(" better.", 0.9)]
    with Store.create(tmp_path / "p.pairscope") as store:
        store.add_items([Item("a", "q", (Response(0, "x"), Response(1, "y")), reference=Reference(ranking=(1, 0)))])
        run = fake_run(store)
        item_id = store.item_id("a")
        stale = VerdictRecord(
            run.id, item_id, 0, (0, 1), "Response 2 is better.", 1, None, True, "", logprobs=logprobs, confidence=0.5
        )
        record_verdicts(store, run, [stale])
        derived = reparse(store, run.id, "lenient")
        (sample,) = store.verdicts(derived.id)
        assert sample.choice == 1 and sample.confidence == pytest.approx(0.8, abs=1e-6)
