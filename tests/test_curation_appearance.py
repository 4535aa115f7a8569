"""Global appearance: the real detection → matching → crop dedup → outfit description → MCQ path, offline
(OpenCV HOG and Haar, a tiny random DINOv2, a describer behind the loopback OpenAI server), and the released outfit file."""
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vlmlens.curation.appearance import (OUTFIT_DISTRACTORS, ColourHistogram, Dinov2Features, FeatureFaceMatcher,
                                         HaarFaceDetector, HogPeopleDetector, appearance_crops, appearance_questions,
                                         describe_outfits, draw_person, load_outfit_file, tiny_dinov2, write_cast_video)
from vlmlens.curation.generate import IDK, Source

DATA = Path(__file__).parent / "data" / "infinibench_curation"
HAIR = {"Sheldon": (30, 30, 60), "Penny": (80, 200, 230)}
RED, GREEN, BLUE = (40, 40, 200), (40, 160, 40), (200, 60, 40)


def _ref(hair):
    img = np.full((360, 480, 3), (210, 210, 210), np.uint8)
    draw_person(img, 240, 100, 160, (90, 90, 90), hair)
    return Image.fromarray(img[:, :, ::-1].copy())


@pytest.fixture(scope="module")
def crops(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("appearance")
    scenes = [{"people": [(140, RED, HAIR["Sheldon"]), (340, GREEN, HAIR["Penny"])]}, {"people": [(140, RED, HAIR["Sheldon"])]},
              {"people": [(240, BLUE, HAIR["Sheldon"])]}, {"people": [(140, BLUE, HAIR["Sheldon"]), (340, GREEN, HAIR["Penny"])]}]
    vid = write_cast_video(tmp / "ep.mp4", scenes)
    matcher = FeatureFaceMatcher({n: [_ref(h)] for n, h in HAIR.items()}, ColourHistogram(),
                                 face_detector=HaarFaceDetector(scale=1.03, neighbours=2), expand=0.5)
    feats = Dinov2Features(tiny_dinov2(tmp / "dinov2"), resize=112, crop=112)
    src = Source("ep", video=str(vid), subtitles=None, title="Cast test")
    st = appearance_crops([src], tmp / "build", HogPeopleDetector(), matcher, feats, fps=0.5, threshold=0.995)
    return tmp, src, st


def test_crops_per_character_in_time_order_deduplicated(crops):
    _, _, st = crops
    rows = {r["item"]["character"]: r["item"] for r in st.items()}
    assert set(rows) == {"Sheldon", "Penny"}
    assert rows["Sheldon"]["n_detected"] == 16 and rows["Penny"]["n_detected"] == 8      # 0.5 fps over 32 s
    assert rows["Sheldon"]["times"] == [1.0, 17.0] and rows["Penny"]["times"] == [1.0]     # one crop per look
    for r in rows.values():
        for p in r["crops"]:
            im = Image.open(st.dir / p)
            assert im.size[1] > 150                                                        # a whole person, not a face


def _describer(call):
    "A VLM behind the OpenAI API: one outfit per distinct torso colour among the data-URL images it receives."
    import base64, io
    urls = [p["image_url"]["url"] for m in call.json["messages"] if isinstance(m["content"], list) for p in m["content"] if p.get("type") == "image_url"]
    names = []
    for u in urls:
        a = np.asarray(Image.open(io.BytesIO(base64.b64decode(u.split(",", 1)[1]))).convert("RGB"), float)
        h, w = a.shape[:2]
        r, g, b = a[int(h * .38):int(h * .55), int(w * .4):int(w * .6)].reshape(-1, 3).mean(0)
        names.append("red shirt" if r > max(g, b) + 30 else "blue shirt" if b > max(r, g) + 30 else "green shirt")
    outs, idx = [], []
    for k, n in enumerate(names):
        if not outs or outs[-1] != n: outs.append(n); idx.append(k)
    return json.dumps({"outfits": outs, "indices": idx})


def test_outfits_described_over_the_api_then_questions(crops, server, monkeypatch):
    tmp, src, st = crops
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    server.responder = _describer
    kw = {"base_url": server.openai_base_url, "cache": str(tmp / "api.sqlite")}
    ost = describe_outfits(st, tmp / "build", "gpt-4o", describer_kwargs=kw)
    assert {r["item"]["character"]: r["item"]["outfits"] for r in ost.items()} == {"Sheldon": ["red shirt", "blue shirt"], "Penny": ["green shirt"]}
    sent = server.requests("openai")
    assert len(sent) == 2 and "Image index: 0" in json.dumps(sent[0].json)
    qst = appearance_questions(ost, tmp / "build", [src])
    items = {r["item"]["character"]: r["item"] for r in qst.items()}
    sh = items["Sheldon"]
    assert sh["skill_name"] == "global_appearance" and sh["video_path_mp4"] == src.video
    assert sh["options"][sh["answer_idx"]] == ["red shirt", "blue shirt"] and IDK in sh["options"]
    assert sum(o in OUTFIT_DISTRACTORS for o in sh["options"]) == 3                      # two outfits: three distractor lists


def test_bad_describer_output_is_rejected(crops, server, monkeypatch):
    tmp, _, st = crops
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    server.responder = lambda call: json.dumps({"outfits": ["a", "b", "c"], "indices": [0]})
    ost = describe_outfits(st, tmp / "build_bad", "gpt-4o", describer_kwargs={"base_url": server.openai_base_url, "cache": str(tmp / "api2.sqlite")})
    rej = ost.rejected()
    assert len(rej) == 2 and all("3 outfits but 1 transition indices" in r["reason"] for r in rej) and not ost.items()
    d = ost.store.read_summary()["decisions"]["describer"]
    assert (d["n"], d["n_valid"]) == (2, 0) and "3 outfits but 1 transition indices" in d["top_cause"]      # counted, so the command says so


def test_the_released_outfit_file_is_the_outfit_stage_output(tmp_path):
    recs = load_outfit_file(DATA / "bbt_global_appearance_gpt4o.json")
    raw = json.loads((DATA / "bbt_global_appearance_gpt4o.json").read_text())
    assert len(recs) == sum(len(c) for eps in raw.values() for c in eps.values())
    st = appearance_questions(recs, tmp_path)
    items = st.items()
    assert len(items) + len(st.rejected()) == len(recs) and len(items) == len(recs)
    one = next(r["item"] for r in items if r["item"]["character"] == "Leonard")
    truth = raw[f"season_{one['season']}"][f"episode_{one['episode']}"]["Leonard"]
    assert one["options"][one["answer_idx"]] == truth and one["video_path_mp4"] == f"/bbt/season_{one['season']}/episode_{one['episode']}.mp4"
    assert one["show"] == "The Big Bang Theory"
    assert "Leonard" in one["question"] and one["question"].startswith("Choose the correct option for the following question:  ")
    again = appearance_questions(recs, tmp_path / "again")
    assert [r["item"] for r in again.items()] == [r["item"] for r in items]                # seeded: the same options


def test_malformed_outfit_file_names_the_entry(tmp_path):
    (tmp_path / "o.json").write_text(json.dumps({"season_2": {"episode_3": {"Howard": []}}}))
    with pytest.raises(ValueError, match=r"season_2\.episode_3\.Howard: outfits must be a non-empty list"):
        load_outfit_file(tmp_path / "o.json")


def _curate(*argv):
    import argparse
    from vlmlens.cli import CURATE_EXTENSIONS
    from vlmlens.curation import cli as ccli
    p = argparse.ArgumentParser(prog="vlmlens"); ccli.add_parser(p.add_subparsers(dest="command"), extensions=CURATE_EXTENSIONS)
    return ccli.main(p.parse_args(["curate", *argv]), extensions=CURATE_EXTENSIONS)


def _pipeline_inputs(tmp, video_bytes=None):
    (tmp / "refs" / "Sheldon").mkdir(parents=True)
    _ref(HAIR["Sheldon"]).save(tmp / "refs" / "Sheldon" / "1.png")
    vid = tmp / "src" / "ep.mp4"; vid.parent.mkdir()
    if video_bytes is None: write_cast_video(vid, [{"people": [(140, RED, HAIR["Sheldon"])]}])
    else: vid.write_bytes(video_bytes)
    (tmp / "src" / "sources.jsonl").write_text(json.dumps({"video_id": "ep", "video": "ep.mp4", "title": "Cast test"}) + "\n")
    return ["appearance", "--sources", str(tmp / "src"), "--references", str(tmp / "refs"), "--describer", "gpt-4o", "--out", str(tmp / "b")]


def test_a_missing_engine_is_named_before_any_work(tmp_path, capsys):
    import importlib.util
    argv = _pipeline_inputs(tmp_path)
    if importlib.util.find_spec("insightface") is None:                          # the default matcher, in no vlmlens extra
        assert _curate(*argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--matcher insightface needs `pip install insightface onnxruntime`" in err[0]
    assert _curate(*argv, "--matcher", "haar", "--features", str(tmp_path / "no-dinov2")) == 2
    err = capsys.readouterr().err
    assert "DINOv2 weights not available" in err and "huggingface-cli download" in err
    assert not (tmp_path / "b").exists()                                           # nothing started, nothing written


def test_a_failed_crop_step_is_a_failure_not_zero_items(tmp_path, capsys):
    from vlmlens.core import NothingAnswered
    argv = _pipeline_inputs(tmp_path, video_bytes=b"not a video")
    with pytest.raises(NothingAnswered) as e:
        _curate(*argv, "--matcher", "haar", "--features", tiny_dinov2(tmp_path / "dinov2"))
    assert e.value.exit_code == 3 and "curate appearance_crops" in str(e.value) and "1 item failed" in str(e.value)
    assert "appearance_qa" not in capsys.readouterr().out


def test_the_command_line_pipeline_finds_both_outfits(tmp_path, server, monkeypatch, capsys):
    "`curate appearance --matcher haar` end to end: Sheldon changes from a red to a blue shirt; both outfits reach the question."
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    server.responder = _describer
    for n, h in HAIR.items():
        (tmp_path / "refs" / n).mkdir(parents=True); _ref(h).save(tmp_path / "refs" / n / "1.png")
    scenes = [{"people": [(140, RED, HAIR["Sheldon"]), (340, GREEN, HAIR["Penny"])]}, {"people": [(140, RED, HAIR["Sheldon"])]},
              {"people": [(240, BLUE, HAIR["Sheldon"])]}, {"people": [(140, BLUE, HAIR["Sheldon"]), (340, GREEN, HAIR["Penny"])]}]
    write_cast_video(tmp_path / "src" / "ep.mp4", scenes)
    (tmp_path / "src" / "sources.jsonl").write_text(json.dumps({"video_id": "ep", "video": "ep.mp4", "title": "Cast test"}) + "\n")
    rc = _curate("appearance", "--sources", str(tmp_path / "src"), "--references", str(tmp_path / "refs"), "--describer", "gpt-4o",
                 "--matcher", "haar", "--features", tiny_dinov2(tmp_path / "dinov2"), "--crop-threshold", "0.995", "--out", str(tmp_path / "b"),
                 "--model-kwarg", f"base_url={server.openai_base_url}", "--model-kwarg", "cache=false")
    assert rc == 0 and "appearance_qa: 2 items" in capsys.readouterr().out
    from vlmlens.curation.store import find_step
    qa = {r["item"]["character"]: r["item"] for r in find_step(tmp_path / "b", "appearance_qa").items()}
    assert qa["Sheldon"]["options"][qa["Sheldon"]["answer_idx"]] == ["red shirt", "blue shirt"]
