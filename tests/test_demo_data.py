"""The shipped demo benchmark: deterministic generation, valid aligned samples, and answers that are really
visible in the generated media (checked by decoding the videos and parsing the subtitles)."""
import json
import threading
from collections import defaultdict
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from vlmlens.benchmarks.base import get_benchmark
from vlmlens.benchmarks import demo
from vlmlens.core import RunConfig, Sample
from vlmlens.media import read_subtitles, subtitles_for_frames

LANGS = ("en", "hi", "te")


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    "Two independent builds: one through ensure_demo_data (cache layout), one through build_demo_data."
    root = tmp_path_factory.mktemp("cache")
    a = demo.ensure_demo_data(root, progress=False)
    b = tmp_path_factory.mktemp("second") / "demo"
    demo.build_demo_data(b)
    return root, a, b


@pytest.fixture(scope="module")
def records(builds):
    _, a, _ = builds
    return [json.loads(l) for l in (a / "samples.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def samples(builds):
    root, _, _ = builds
    ss, errs = demo.DemoBenchmark(root=root).load(RunConfig("demo", "m"))
    assert errs == []
    return ss


def decode_all(path) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


PALETTE = {k: np.array(v["rgb"], float) for k, v in demo.COLORS.items()}


def dominant_color(frame: np.ndarray) -> str:
    "Nearest palette colour to the frame's median pixel (the digit covers far less than half of the frame)."
    med = np.median(frame.reshape(-1, 3).astype(float), axis=0)
    return min(PALETTE, key=lambda k: np.abs(PALETTE[k] - med).sum())


def read_number(frame: np.ndarray, color: str) -> int:
    "The digit 1-9 whose freshly drawn scene frame is closest to the decoded frame."
    diffs = {n: np.abs(np.asarray(demo.scene_frame(color, n), float) - frame).mean() for n in range(1, 10)}
    best = sorted(diffs, key=diffs.get)
    assert diffs[best[1]] - diffs[best[0]] > 2, diffs  # unambiguous
    return best[0]


def test_generation_is_deterministic(builds):
    _, a, b = builds
    assert (a / "samples.jsonl").read_bytes() == (b / "samples.jsonl").read_bytes()
    files = lambda d, pat: sorted(p.relative_to(d) for p in d.glob(pat))
    for pat in ("images/*.png", "subtitles/*.srt"):
        assert files(a, pat) and files(a, pat) == files(b, pat)
        for rel in files(a, pat): assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    vids = files(a, "videos/*.mp4")
    assert len(vids) == len(demo.SCENES_PER_VIDEO) and vids == files(b, "videos/*.mp4")
    for rel in vids:
        fa, fb = decode_all(a / rel), decode_all(b / rel)
        assert len(fa) == len(fb) > 0 and all(np.array_equal(x, y) for x, y in zip(fa, fb)), rel


def test_a_different_seed_gives_different_data(tmp_path, builds):
    _, a, _ = builds
    demo.build_demo_data(tmp_path / "s1", seed=1)
    assert (tmp_path / "s1" / "samples.jsonl").read_bytes() != (a / "samples.jsonl").read_bytes()


def test_records_are_canonical_samples(builds, records):
    _, a, _ = builds
    assert 10 <= len(records) // 3 <= 16
    for r in records:
        s = Sample.from_dict(r)  # strict: no unknown fields
        assert s.benchmark == "demo" and s.answer_type in ("mcq", "short"), s.id
        assert s.id == f"{s.align_id}-{s.language}" and s.id.startswith(f"demo-{s.subset}-")
        for m in s.media:
            assert not Path(m.path).is_absolute() and (a / m.path).is_file(), m.path
        if s.subtitles: assert not Path(s.subtitles).is_absolute() and (a / s.subtitles).is_file()
    assert len({r["id"] for r in records}) == len(records)
    subsets = {r["subset"] for r in records}
    assert subsets == {"video_order", "video_color", "video_subtitles", "image_color", "image_number", "real_text"}
    assert not any(r["answer_type"] == "open" for r in records)


def test_languages_are_aligned(samples):
    by_lang = defaultdict(set)
    by_align = defaultdict(list)
    for s in samples:
        by_lang[s.language].add(s.align_id)
        by_align[s.align_id].append(s)
    assert set(by_lang) == set(LANGS)
    assert by_lang["en"] == by_lang["hi"] == by_lang["te"]
    for aid, group in by_align.items():
        assert sorted(s.language for s in group) == sorted(LANGS), aid
        assert len({json.dumps([m.to_dict() for m in s.media]) for s in group}) == 1, aid
        assert len({s.subset for s in group}) == 1 and len({s.answer_type for s in group}) == 1, aid
        assert len({len(s.options) for s in group}) == 1, aid
        if group[0].answer_type == "mcq": assert len({s.answer for s in group}) == 1, aid
        # translated, not copied: the Hindi and Telugu questions are in their own scripts
        q = {s.language: s.question for s in group}
        assert any("\u0900" <= ch <= "\u097f" for ch in q["hi"]) and any("\u0c00" <= ch <= "\u0c7f" for ch in q["te"]), aid


def test_mcq_answers_are_valid_indices(samples):
    mcq = [s for s in samples if s.answer_type == "mcq"]
    assert mcq
    for s in mcq:
        assert isinstance(s.answer, int) and 0 <= s.answer < len(s.options), s.id
        assert len({json.dumps(o, ensure_ascii=False) for o in s.options}) == len(s.options), s.id  # no duplicate options
    lists = [s for s in mcq if all(isinstance(o, list) for o in s.options)]
    assert lists, "at least one question whose options are ordered lists"
    for s in [s for s in samples if s.answer_type == "short"]:
        assert isinstance(s.answer, str) and s.answer in s.metadata["accepted_answers"], s.id
    # the gold index is not always the same position (the options are shuffled)
    assert len({s.answer for s in mcq if s.subset.startswith(("video", "image"))}) >= 3


def test_videos_show_what_the_metadata_claims(samples):
    videos = {}
    for s in samples:
        if s.media[0].kind != "video": continue
        meta = s.metadata
        if s.media[0].path not in videos:
            frames = decode_all(s.media[0].path)
            assert len(frames) == meta["n_frames"] and frames[0].shape == (96, 160, 3), s.media[0].path
            # scenes as read from the pixels: colour of every frame, number in the middle frame of each run
            colors = [dominant_color(f) for f in frames]
            runs, start = [], 0
            for i in range(1, len(colors) + 1):
                if i == len(colors) or colors[i] != colors[start]:
                    mid = frames[(start + i) // 2]
                    runs.append({"color": colors[start], "start_frame": start, "end_frame": i, "number": read_number(mid, colors[start])})
                    start = i
            videos[s.media[0].path] = runs
        seen = videos[s.media[0].path]
        claimed = [{k: sc[k] for k in ("color", "start_frame", "end_frame", "number")} for sc in meta["scenes"]]
        assert seen == claimed, s.id
        for sc in meta["scenes"]:
            assert sc["start"] == sc["start_frame"] / meta["fps"] and sc["end"] == sc["end_frame"] / meta["fps"]
        if s.language != "en": continue
        # the gold answer follows from what is on screen
        kind, gold, ev = meta["question_kind"], s.options[s.answer], meta["evidence_scenes"]
        name = lambda c: demo.COLORS[c]["en"]
        if kind == "after_number":
            assert ev[1] == ev[0] + 1 and name(seen[ev[0]]["color"]) in s.question and gold == str(seen[ev[1]]["number"]), s.id
        elif kind == "color_order": assert gold == [name(r["color"]) for r in seen], s.id
        elif kind == "first_color": assert gold == name(seen[0]["color"]), s.id
        elif kind == "scene_count": assert gold == str(len(seen)), s.id
        elif kind == "color_of_number":
            assert f"number {seen[ev[0]]['number']} " in s.question and gold == name(seen[ev[0]]["color"]), s.id


def test_subtitles_carry_the_facts_the_questions_ask_about(samples):
    subs = [s for s in samples if s.metadata.get("answer_source") == "subtitles"]
    assert {s.language for s in subs} == set(LANGS) and len(subs) >= 6
    for s in [s for s in samples if s.subtitles]:
        cues = read_subtitles(s.subtitles)
        scenes = s.metadata["scenes"]
        assert len(cues) == len(scenes), s.subtitles
        for c, sc in zip(cues, scenes):  # one line per scene, inside the scene, in the sample's language
            assert sc["start"] < c.start_s < c.end_s < sc["end"], s.subtitles
            assert c.text == demo.PLACES[sc["place"]]["line"][s.language]
    for s in subs:
        cues = read_subtitles(s.subtitles)
        scenes, ev, lang = s.metadata["scenes"], s.metadata["evidence_scenes"], s.language
        said = lambda k: subtitles_for_frames(cues, [(scenes[k]["start"] + scenes[k]["end"]) / 2])[0]
        gold = s.options[s.answer]
        kind = s.metadata["question_kind"]
        if kind in ("place_during", "place_after"):
            target = ev[-1]
            place = next(p for p, v in demo.PLACES.items() if v[lang] == gold)
            assert said(target) == [demo.PLACES[place]["line"][lang]], s.id
            # and no other option's place is said in that scene
            others = [p for p, v in demo.PLACES.items() if v[lang] in s.options and p != place]
            assert all(demo.PLACES[p]["line"][lang] not in said(target) for p in others)
        elif kind == "number_at_place":
            k = ev[0]
            assert gold == str(scenes[k]["number"]) and said(k) == [demo.PLACES[scenes[k]["place"]]["line"][lang]], s.id
        else:
            raise AssertionError(f"unexpected subtitle question kind {kind}")


def test_images_show_what_the_metadata_claims(samples):
    for s in [s for s in samples if s.subset == "image_color"]:
        img = np.asarray(Image.open(s.media[0].path).convert("RGB"))
        centres = {"circle": (60, 28), "square": (60, 80), "triangle": (70, 132)}
        for shape, color in s.metadata["shapes"].items():
            assert tuple(img[centres[shape]]) == demo.COLORS[color]["rgb"], (s.id, shape)
        if s.language == "en":
            shape = next(k for k in demo.SHAPES if f"the {k}?" in s.question)
            assert s.options[s.answer] == demo.COLORS[s.metadata["shapes"][shape]]["en"]
    for s in [s for s in samples if s.subset == "image_number"]:
        assert s.answer == str(s.metadata["number"]) and demo.NUMBER_WORDS[s.language][s.metadata["number"]] in s.metadata["accepted_answers"]
        img = np.asarray(Image.open(s.media[0].path).convert("L"))
        assert (img < 60).mean() > 0.01  # ink on the card


def test_hintel_real_records_in_all_languages(samples):
    real = [s for s in samples if s.subset == "real_text"]
    src = json.loads((Path(demo.__file__).parents[1] / "assets" / "hintel_examples.json").read_text(encoding="utf-8"))
    by_subset = defaultdict(dict)
    for s in real: by_subset[s.metadata["hintel_subset"]][s.language] = s
    assert set(by_subset) == {"VQAv2", "RealWorldQA"}
    for name, per_lang in by_subset.items():
        assert set(per_lang) == set(LANGS), name
        for lang, s in per_lang.items():
            assert s.metadata["source_question"] == src[name][lang]["q"] and s.metadata["source_answer"] == src[name][lang]["a"]
            assert src[name][lang]["q"].startswith(s.question)  # the original text, options split off
    assert [per.answer for per in by_subset["VQAv2"].values()] == [src["VQAv2"][l]["a"] for l in LANGS]
    rw = by_subset["RealWorldQA"]
    assert all(s.answer == 0 and len(s.options) == 3 for s in rw.values())
    assert rw["en"].options == ["The middle candle", "The right candle", "The left candle"]
    # the drawn candles make "the middle candle is the largest" true
    img = np.asarray(Image.open(rw["en"].media[0].path).convert("RGB")).astype(int)
    wax = np.abs(img - (240, 232, 205)).sum(-1) < 10
    sizes = [wax[:, lo:hi].sum() for lo, hi in ((0, 56), (56, 104), (104, 160))]
    assert sizes[1] > max(sizes[0], sizes[2])


def test_load_filters_and_data_path(builds, samples, tmp_path):
    root, a, _ = builds
    b = get_benchmark("demo", root=root)
    assert isinstance(b, demo.DemoBenchmark)
    for m in [m for s in samples for m in s.media]: assert Path(m.path).is_absolute() and str(m.path).startswith(str(a))
    got, _ = b.load(RunConfig("demo", "m", subset="video_subtitles", language="hi"))
    assert got and {(s.subset, s.language) for s in got} == {("video_subtitles", "hi")}
    assert len(got) == sum(s.subset == "video_subtitles" and s.language == "hi" for s in samples)
    got, _ = b.load(RunConfig("demo", "m", language="en,te"))
    assert {s.language for s in got} == {"en", "te"} and len(got) == 2 * len(samples) // 3
    # data_path: a user's own canonical file, relative media resolved against its folder
    own = tmp_path / "mine"
    own.mkdir()
    (own / "x.png").write_bytes((a / "images" / "number_00.png").read_bytes())
    rows = [{"id": "q1", "question": "What number?", "answer": "7", "answer_type": "short", "media": ["x.png"], "language": "hi"},
            {"id": "q2", "question": "?", "answer_typo": 1}]
    (own / "mine.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    got, errs = b.load(RunConfig("demo", "m", data_path=str(own / "mine.jsonl")))
    assert [s.id for s in got] == ["q1"] and got[0].media[0].path == str(own / "x.png") and got[0].benchmark == "demo"
    assert len(errs) == 1 and "answer_typo" in str(errs[0]) and ":2" in str(errs[0])
    assert [s.id for s in b.load(RunConfig("demo", "m", data_path=str(own / "mine.jsonl"), language="en"))[0]] == []
    with pytest.raises(FileNotFoundError, match="no such file"): b.load(RunConfig("demo", "m", data_path=str(own / "nope.jsonl")))


def test_concurrent_first_use_builds_one_complete_dataset(tmp_path):
    out, errors = [], []
    def go():
        try: out.append(demo.ensure_demo_data(tmp_path, progress=False))
        except Exception as e: errors.append(e)
    threads = [threading.Thread(target=go) for _ in range(2)]
    for t in threads: t.start()
    for t in threads: t.join()
    assert errors == [] and len(out) == 2 and out[0] == out[1] == tmp_path / "demo" / "v1"
    assert [p.name for p in (tmp_path / "demo").iterdir()] == ["v1"]  # no temporary folder left
    assert len((out[0] / "samples.jsonl").read_text(encoding="utf-8").splitlines()) > 0


def test_cache_env_and_repair(tmp_path, monkeypatch):
    monkeypatch.setenv("VLMLENS_CACHE", str(tmp_path / "c"))
    d = demo.ensure_demo_data(progress=False)
    assert d == tmp_path / "c" / "demo" / "v1" and (d / "samples.jsonl").is_file()
    (d / "samples.jsonl").unlink()  # damaged by hand: rebuilt
    assert demo.ensure_demo_data(progress=False) == d and (d / "samples.jsonl").is_file()
    with pytest.raises(FileExistsError, match="empty or missing folder"): demo.build_demo_data(d)
