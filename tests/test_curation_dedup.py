"""Deduplication with the real all-MiniLM-L6-v2 weights: thresholds, scopes, one kept per cluster, cache, Figure 5,
and the tiled search against the full similarity matrix."""
import json

import numpy as np
import pytest

from vlmlens.curation.dedup import (PAIR_LABELS, SentenceEmbedder, deduplicate, dedup_step, minilm_path, pair_review_items, select_diverse,
                                    similar_pairs)
from vlmlens.curation.review import VerdictLog
from vlmlens.curation.store import Step


@pytest.fixture(scope="module")
def emb():
    return SentenceEmbedder(minilm_path())


def _item(i, video, skill, q, opts=None):
    return {"id": i, "video_id": video, "skill_name": skill, "question": q, "options": opts}


def test_thresholds_scopes_and_the_false_positive_of_appendix_b5(emb):
    before = "Did the event 'Ross watches TV with Rachel' happen before the event 'Monica cooks dinner'?"
    items = [_item("a", "v1", "chronological_understanding", before, ["Yes", "No"]),
             _item("b", "v1", "chronological_understanding", before.replace("before the event", "after the event"), ["Yes", "No"]),
             _item("c", "v1", "deep_context_understanding", "Why does Chandler break up with Janice?"),
             _item("d", "v2", "chronological_understanding", before, ["Yes", "No"]),
             _item("e", "v2", "deep_context_understanding", "What colour is the couch in Central Perk?")]
    d = deduplicate(items, emb, threshold=0.95, scope="video")
    flags = {r["id"]: r for r in d["items"]}
    assert flags["b"]["dup_of"] == "a" and flags["b"]["flagged_0.90"]        # before/after: flagged (a false positive)
    assert flags["d"]["dup_of"] is None                                       # same text, another video: not in scope
    assert deduplicate(items, emb, threshold=0.95, scope="all")["items"][3]["dup_of"] == "a"
    assert deduplicate(items, emb, threshold=0.999, scope="video")["items"][1]["dup_of"] is None
    share = {(s["skill"], s["threshold"]): s["flagged_share"] for s in d["stats"]}
    assert share[("chronological_understanding", 0.95)] == pytest.approx(2 / 3) and share[("deep_context_understanding", 0.9)] == 0


def test_step_rejects_duplicates_keeps_flags_and_reuses_embeddings(emb, tmp_path):
    up = Step(tmp_path, "generate", {})
    qs = [("q1", "What does Sheldon drink in the kitchen?"), ("q2", "What does Sheldon drink in the kitchen ?"), ("q3", "Why is Penny late?")]
    up.process([("v", None)], lambda _, w: [w.accept(i, {"video_id": "v", "skill_name": "deep_context_understanding", "question": q}) for i, q in qs])
    n0 = emb.n_encoded
    st = dedup_step(tmp_path, up, embedder=emb, drop=True)
    assert [r["id"] for r in st.rejected()] == ["q2"] and st.rejected()[0]["stage"] == "dedup"
    assert st.items()[0]["item"]["dedup"]["flagged_0.95"] is True
    assert json.loads((st.dir / "pairs.json").read_text())["0.95"] == [["q1", "q2", pytest.approx(st.rejected()[0]["item"]["dedup"]["sim"], abs=1e-4)]]
    keep = dedup_step(tmp_path, up, embedder=emb)                             # the default: flag only
    assert keep.dir != st.dir and len(keep.items()) == 3 and not keep.rejected()
    assert emb.n_encoded - n0 <= 3                                             # the second step embedded nothing new


def test_tiled_search_equals_the_full_matrix():
    rng = np.random.default_rng(1)
    e = rng.normal(size=(1500, 24)).astype(np.float32)
    e[rng.integers(0, 1500, 200)] = e[rng.integers(0, 1500, 200)] + 0.05 * rng.normal(size=(200, 24)).astype(np.float32)
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    groups = rng.integers(0, 7, 1500)
    s = e @ e.T
    same = groups[:, None] == groups[None, :]
    i, j = np.nonzero(np.triu((s >= 0.9) & same, 1))
    p, _ = similar_pairs(e, 0.9, groups.tolist(), block=256)                  # small groups: batched products
    assert len(p) > 10 and [tuple(x) for x in p.tolist()] == list(zip(i.tolist(), j.tolist()))
    i, j = np.nonzero(np.triu(s >= 0.9, 1))
    p, _ = similar_pairs(e, 0.9, None, block=256)                             # one large group: tiles
    assert [tuple(x) for x in p.tolist()] == list(zip(i.tolist(), j.tolist()))
    mixed = np.where(np.arange(1500) < 700, 0, groups)                         # one big group and small ones together
    i, j = np.nonzero(np.triu((s >= 0.9) & (mixed[:, None] == mixed[None, :]), 1))
    p, _ = similar_pairs(e, 0.9, mixed.tolist(), block=128)
    assert [tuple(x) for x in p.tolist()] == list(zip(i.tolist(), j.tolist()))


def test_diverse_events_keep_order_and_drop_repeats(emb):
    ev = [f"Sheldon makes tea number {k}." for k in range(30)] + ["Penny answers the phone.", "Leonard feeds the ducks."]
    keep = select_diverse(ev, 5, emb)
    assert keep == sorted(keep) and {30, 31} <= set(keep)
    with pytest.raises(ValueError, match="k must be"): select_diverse(ev, 0, emb)


def test_bad_inputs():
    with pytest.raises(ValueError, match="distinct"): deduplicate([{"id": "a", "question": "x"}, {"id": "a", "question": "y"}], lambda t: np.ones((len(t), 2)))
    with pytest.raises(ValueError, match="thresholds"): deduplicate([], lambda t: None, thresholds=(1.5,))


EVENTS = [("Ross watches TV with Rachel", "Monica cooks dinner"), ("Joey buys a duck", "Chandler moves out"),
          ("Phoebe sings at the cafe", "Gunther cleans the counter")]


def _before_after(tmp_path):
    "Three before/after pairs (one word apart, opposite answers), as the generator writes them, plus one open-ended item."
    up = Step(tmp_path, "generate", {})
    def items(_, w):
        for k, (e1, e2) in enumerate(EVENTS):
            for word, gold in (("before", 0), ("after", 1)):
                w.accept(f"v/chron/{k}-{word}", {"video_id": "v", "skill_name": "chronological_understanding", "options": ["Yes", "No"],
                                                 "answer_idx": gold, "question": f"Did the event '{e1}' happen {word} the event '{e2}'?"})
        w.accept("v/deep/0", {"video_id": "v", "skill_name": "deep_context_understanding", "question": "Why is Ross upset?", "answer": "Rachel left."})
    up.process([("v", None)], items)
    return up


def test_before_after_pairs_are_flagged_for_review_not_removed(emb, tmp_path):
    """InfiniBench App. B.5: such pairs are false positives. The default keeps every item (the Yes/No balance intact) and shows
    the pairs side by side for review; removal happens only for pairs reviewers confirm, and the balance is in the summary."""
    up = _before_after(tmp_path)
    st = dedup_step(tmp_path, up, embedder=emb, threshold=0.9)
    assert len(st.items()) == 7 and st.rejected() == []
    s = st.store.read_summary()
    assert s["n_pairs_flagged"] == 3 and s["removal"] == "none (flag only)"
    assert s["answer_balance"]["chronological_understanding"] == {"before": {"No": 3, "Yes": 3}, "after": {"No": 3, "Yes": 3}}
    review = pair_review_items(st)
    assert sorted(r["id"] for r in review) == [f"v/chron/{k}-before~v/chron/{k}-after" for k in range(3)]
    assert [(x["answer"], " before " in x["question"]) for x in review[0]["pair"]] == [("Yes", True), ("No", False)]
    log = VerdictLog(tmp_path / "pairs.jsonl", PAIR_LABELS)
    for r in review: log.append(r["id"], "alice", "distinct")
    log.append(review[0]["id"], "bob", "duplicate"); log.append(review[0]["id"], "carol", "duplicate")   # a 2-1 majority: remove one
    kept = dedup_step(tmp_path, up, embedder=emb, threshold=0.9, confirmed=log)
    assert [r["id"] for r in kept.rejected()] == ["v/chron/0-after"] and "reviewers confirmed a duplicate of v/chron/0-before" in kept.rejected()[0]["reason"]
    assert kept.store.read_summary()["answer_balance"]["chronological_understanding"]["after"] == {"No": 2, "Yes": 3}
    drop = dedup_step(tmp_path, up, embedder=emb, threshold=0.9, drop=True)                 # the explicit, unreviewed choice
    assert drop.rejected() == []                                                            # the pairs differ in answer: both kept
    assert drop.store.read_summary()["answer_balance"]["chronological_understanding"]["after"] == {"No": 3, "Yes": 3}


def test_drop_removes_repeats_of_the_same_answer_keeps_the_balance_and_quotes_the_pairs_own_similarity(emb, tmp_path):
    "Eight before/after pairs (Yes/No 8/8) plus a reworded repeat of two of them: --drop removes the two repeats only, whatever their answer."
    up = Step(tmp_path, "generate", {})
    events = [("Ross watches TV with Rachel", "Monica cooks dinner"), ("Joey buys a duck", "Chandler moves out"),
              ("Phoebe sings at the cafe", "Gunther cleans the counter"), ("Rachel opens a letter", "Ross reads a book"),
              ("Monica paints a wall", "Chandler fixes a chair"), ("Joey wins a game", "Phoebe finds a cat"),
              ("Gunther closes the cafe", "Rachel waters the plants"), ("Ross calls his mother", "Joey orders pizza")]
    def items(_, w):
        for k, (e1, e2) in enumerate(events):
            for word, gold in (("before", 0), ("after", 1)):
                w.accept(f"v/{k}-{word}", {"video_id": "v", "skill_name": "chronological_understanding", "options": ["Yes", "No"],
                                           "answer_idx": gold, "question": f"Did the event '{e1}' happen {word} the event '{e2}'?"})
        for k, word, gold in ((0, "after", 1), (3, "before", 0)):                           # the same question again, reworded
            e1, e2 = events[k]
            w.accept(f"v/{k}-{word}-again", {"video_id": "v", "skill_name": "chronological_understanding", "options": ["Yes", "No"],
                                             "answer_idx": gold, "question": f"Did the event '{e1}' happen {word} the event '{e2}' ?"})
    up.process([("v", None)], items)
    st = dedup_step(tmp_path, up, embedder=emb, threshold=0.9, drop=True)
    assert sorted(r["id"] for r in st.rejected()) == ["v/0-after-again", "v/3-before-again"]
    assert st.store.read_summary()["answer_balance"]["chronological_understanding"] == {"before": {"No": 9, "Yes": 9}, "after": {"No": 8, "Yes": 8}}
    pairs = {(a, b): x for a, b, x in json.loads((st.dir / "pairs.json").read_text())["0.90"]}
    for r in st.rejected():
        kept = {"v/0-after-again": "v/0-after", "v/3-before-again": "v/3-before"}[r["id"]]
        own = pairs[(kept, r["id"])] if (kept, r["id"]) in pairs else pairs[(r["id"], kept)]
        assert f"near-duplicate of {kept} with the same answer (cosine {own} >= 0.9)" in r["reason"]   # its own pair's cosine
        assert (r["item"]["dedup"]["dup_of"], r["item"]["dedup"]["sim"]) == (kept, own)


def test_a_chain_of_similar_items_does_not_crash_and_reruns(tmp_path):
    "a~c and b~c but not a~b: b is in a's cluster without a pair of its own as the later item (a KeyError before)."
    vec = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [0.7071, 0.7071]}
    embed = lambda texts: np.array([vec[t.split()[0]] for t in texts], np.float32)
    up = Step(tmp_path, "generate", {})
    up.process([("v", None)], lambda _, w: [w.accept(k, {"video_id": "v", "skill_name": "deep_context_understanding", "question": f"{k} ?"}) for k in "abc"])
    for _ in range(2):                                                                      # a rerun of the same command too
        st = dedup_step(tmp_path, up, embedder=embed, threshold=0.7, drop=True)
        assert st.summary()["n_failed"] == 0
        assert [(r["id"], r["item"]["dedup"]["dup_of"], r["item"]["dedup"]["sim"]) for r in st.rejected()] == [("c", "a", 0.7071)]   # b is not like a
