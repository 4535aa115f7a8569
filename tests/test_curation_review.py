"""Human review: the widget driven like a person would, two annotators, resuming, validity and agreement."""
import json
import subprocess
import sys
import textwrap

import pytest
from PIL import Image

from vlmlens.curation.review import (ReviewWidget, Verdict, VerdictLog, agreement, consensus, parse_spans,
                                     stratified_sample, validity)
from vlmlens.media import write_video


@pytest.fixture
def video(tmp_path):
    p = tmp_path / "ep.mp4"
    write_video(p, (Image.new("RGB", (64, 48), c) for c in [(220, 30, 30)] * 30 + [(30, 30, 220)] * 30), fps=2)
    return p


def _items(video, n=6):
    return [{"id": f"s{k % 2}/{k}", "stratum": f"skill{k % 2}", "video": str(video), "time_s": 5 * k,
             "question": f"Question {k}?", "answer": f"Answer {k}", "events": ["red", "blue"]} for k in range(n)]


def test_two_annotators_review_resume_and_agree(tmp_path, video):
    items = _items(video)
    log = VerdictLog(tmp_path / "verdicts.jsonl")
    w = ReviewWidget(items, log, "alice", frames=2, window_s=4)
    assert len(w.media.children) == 2                      # frames shown at the item's time
    w.time.value = 20.0                                    # scrubbing redraws the frames around 20 s
    assert [c.children[1].value for c in w.media.children] == ["<small>19.0 s</small>", "<small>21.0 s</small>"]
    for k in range(3):                                     # alice reviews half, then stops
        w.event_spans[0].value = f"{k}-{k + 2}"
        w.buttons["valid" if k != 1 else "invalid"].click()
    w2 = ReviewWidget(items, VerdictLog(tmp_path / "verdicts.jsonl"), "alice")
    assert w2.item["id"] == items[3]["id"]                 # a new session resumes where she stopped
    for k in range(3, 6):
        w2.fields["answer"].value = "edited" if k == 4 else w2.fields["answer"].value
        w2.buttons["valid"].click()
    assert "review finished" in w2.header.value
    bob = ReviewWidget(items, log, "bob")
    for k in range(6): bob.buttons["invalid" if k in (1, 2) else "valid"].click()
    vs = log.read()
    assert len(vs) == 12 and {v.annotator for v in vs} == {"alice", "bob"}
    assert [v.edits for v in vs if v.annotator == "alice" and v.item_id == items[4]["id"]] == [{"answer": "edited"}]
    assert vs[0].event_spans == [[[0.0, 2.0]], None]
    ag = agreement(vs)
    assert ag["n_items"] == 6 and ag["percent_agreement"] == pytest.approx(5 / 6)
    assert ag["cohen_kappa"] == pytest.approx(0.571, abs=1e-3) and ag["krippendorff_alpha"] is not None
    rows = validity(vs, {it["id"]: it["stratum"] for it in items})
    by = {r["stratum"]: r for r in rows}
    assert by["ALL"]["n_reviewed"] == 6 and by["ALL"]["n_valid"] == 4 and by["ALL"]["n_disputed"] == 1
    assert by["skill1"]["validity"] == pytest.approx(2 / 3)


def test_bad_timestamps_are_refused_and_nothing_is_written(tmp_path, video):
    log = VerdictLog(tmp_path / "v.jsonl")
    w = ReviewWidget(_items(video, 2), log, "alice")
    w.spans.value = "1:30-1:00"
    w.buttons["valid"].click()
    assert "ends before it starts" in w.status.value and not log.read() and w.index == 0
    w.event_spans[1].value = "abc"
    w.spans.value = ""
    w.buttons["absent"].click()
    assert "event 1: span" in w.status.value and not log.read()


def test_a_missing_video_is_shown_not_fatal(tmp_path):
    w = ReviewWidget([{"id": "x", "video": str(tmp_path / "gone.mp4"), "question": "Q?"}], VerdictLog(tmp_path / "v.jsonl"), "a")
    assert "cannot show media" in w.media.children[0].value and "gone.mp4" in w.media.children[0].value


def test_concurrent_annotators_append_whole_lines(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        from vlmlens.curation.review import VerdictLog
        log = VerdictLog({str(tmp_path / 'v.jsonl')!r})
        for k in range(200): log.append(f"q{{k}}", sys.argv[1], "valid", note="x" * 300)
    """)
    ps = [subprocess.Popen([sys.executable, "-c", code, a]) for a in ("a", "b", "c")]
    assert all(p.wait() == 0 for p in ps)
    lines = (tmp_path / "v.jsonl").read_text().splitlines()
    assert len(lines) == 600 and all(json.loads(l)["note"] == "x" * 300 for l in lines)
    assert len(VerdictLog(tmp_path / "v.jsonl").latest()) == 600


def test_corrupt_and_unknown_lines_are_skipped_with_the_line_number(tmp_path):
    p = tmp_path / "v.jsonl"
    log = VerdictLog(p)
    log.append("q1", "a", "valid")
    with open(p, "a") as f: f.write('{"item_id": "q2", "annotator": "a", "verdict": "maybe"}\n{"item_id": "q3", "annot')
    with pytest.warns(UserWarning, match=r"v.jsonl:2: not a verdict"):
        assert [v.item_id for v in log.read()] == ["q1"]


def test_sampling_is_stratified_deterministic_and_stable():
    items = [{"id": f"{s}/{k}", "skill": s} for s in ("a", "b", "c") for k in range({"a": 100, "b": 7, "c": 1}[s])]
    smp = stratified_sample(items, "skill", frac=0.2, seed=3)
    assert {s: sum(it["skill"] == s for it in smp) for s in "abc"} == {"a": 20, "b": 2, "c": 1}
    more = items + [{"id": "a/new", "skill": "a"}]
    smp2 = stratified_sample(more, "skill", frac=0.2, seed=3)
    assert [it for it in smp2 if it["skill"] != "a"] == [it for it in smp if it["skill"] != "a"]
    assert stratified_sample(items, "skill", 0.2, seed=4) != smp


def test_spans_and_consensus():
    assert parse_spans("1:02:03.5 - 1:02:04") == [[3723.5, 3724.0]]
    assert consensus([Verdict("q", "a", "valid"), Verdict("q", "a", "invalid")]) == {"q": "invalid"}  # latest per annotator
