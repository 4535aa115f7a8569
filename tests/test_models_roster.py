"""The papers' model rosters in the registry: languages per paper (the gate), App. B.7 and MINERVA-Cultural presets
applied when frames are unset, configuration checks, the ledger, the models guide's table, and import hygiene (the registry and the
API backends load no torch/transformers; no registry <-> api cycle)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from vlmlens import fidelity
from vlmlens.core import RunConfig
from vlmlens.models import registry
from vlmlens.benchmarks.minerva import CURVE_LOCALES
from vlmlens.models.registry import apply_preset, get_spec

ROOT = Path(__file__).resolve().parents[1]

# Transcribed from the papers (not from the registry):
HINTEL = {  # HinTel-AlignBench §4.1 and Tables 3 (Telugu) / 4 (Hindi); every model is also evaluated in English
    "gpt-4.1": ("en", "hi", "te"), "gemini-2.5-flash": ("en", "hi", "te"), "gemini-2.0-flash": ("en", "te"),
    "gemini-1.5-flash": ("en", "te"), "chitrarth-8b": ("en", "hi", "te"), "qwen2.5-vl-7b": ("en", "hi"),
    "aya-vision-8b": ("en", "hi"), "llama-3.2-11b-vision": ("en", "hi"), "gemma3-27b": ("en", "hi"),
    "gemma3-12b": ("en", "hi"), "gemma3-4b": ("en", "hi")}
CURVE = ["qwen2.5-vl-7b", "qwen3-vl-8b", "claude-sonnet-4", "gpt-5-mini", "gpt-5", "gemini-2.5-flash", "gemini-2.5-pro"]
INFINIBENCH_FRAMES = {  # InfiniBench App. B.7 (frames; None: native video)
    "qwen2.5-vl-7b": 768, "qwen2-vl-7b": 768, "internvl3-8b": 128, "internvl2.5-8b": 128, "internvl2-8b": 128,
    "llava-onevision-7b": 128, "longvu-7b": 512, "videochat-flash-7b": 1000, "gpt-4o": 450, "goldfish": 60,
    "minigpt4-video": 60, "internlm-xcomposer2.5-7b": 16, "gemini-2.0-flash": None}


@pytest.mark.parametrize("model,langs", sorted(HINTEL.items()))
def test_hintel_roster_languages(model, langs):
    spec = get_spec(model)
    assert set(spec.languages_for("hintel")) == set(langs)
    for lang in ("en", "hi", "te"):
        assert spec.supports_language(lang, "hintel") == (lang in langs), (model, lang)


@pytest.mark.parametrize("model", CURVE)
def test_curve_roster_runs_all_18_locales(model):
    spec = get_spec(model)
    assert set(spec.languages_for("curve")) == set(CURVE_LOCALES) and len(CURVE_LOCALES) == 18
    assert all(spec.supports_language(loc, "curve") for loc in ("ta-IN", "te-IN", "ar-EG", "zh-TW"))


def test_qwen25_7b_is_gated_per_paper():
    """HinTel evaluates it in Hindi (not Telugu); MINERVA-Cultural in every locale, Telugu included."""
    s = get_spec("qwen2.5-vl-7b")
    assert s.supports_language("hi", "hintel") and not s.supports_language("te", "hintel")
    assert s.supports_language("te-IN", "curve") and s.supports_language("te", "demo")
    with pytest.raises(ValueError, match="not run in 'te' on hintel.*--force"):
        s.check(RunConfig("hintel", "qwen2.5-vl-7b", language="te", modality="text"))
    s.check(RunConfig("hintel", "qwen2.5-vl-7b", language="te", modality="text", force=True))


@pytest.mark.parametrize("model,frames", sorted(INFINIBENCH_FRAMES.items()))
def test_infinibench_presets_apply_when_frames_are_unset(model, frames):
    spec = get_spec(model)
    cfg, applied = apply_preset(RunConfig("infinibench", model), spec)
    assert applied and "B.7" in applied["source"]
    if frames is None: assert cfg.fps == 1.0 and cfg.model_kwargs["video"] == "native"
    else: assert cfg.num_frames == frames
    mode = cfg.benchmark_kwargs.get("subtitle_mode")
    assert mode == ("full" if model.startswith(("qwen2", "gpt-4o", "videochat")) else "per_frame" if frames else None)
    assert apply_preset(RunConfig("infinibench", model, num_frames=16), spec) == (RunConfig("infinibench", model, num_frames=16), None)


def test_user_options_win_over_presets():
    cfg, _ = apply_preset(RunConfig("infinibench", "qwen2.5-vl-7b", model_kwargs={"video_max_pixels": 1000},
                                    benchmark_kwargs={"subtitle_mode": "per_frame"}))
    assert cfg.num_frames == 768 and cfg.model_kwargs["video_max_pixels"] == 1000 and cfg.benchmark_kwargs["subtitle_mode"] == "per_frame"
    cfg, _ = apply_preset(RunConfig("curve", "gemini-2.5-pro", model_kwargs={"video": "frames"}))
    assert cfg.model_kwargs == {"video": "frames"}
    cfg, applied = apply_preset(RunConfig("demo", "qwen2.5-vl-7b"))                    # no paper preset: the model's hint
    assert cfg.num_frames == 32 and "registry default" in applied["source"]


def test_models_vlmlens_cannot_load_say_why_before_the_run():
    for name in ("chitrarth-8b", "longvu-7b", "videochat-flash-7b", "internvl2.5-8b", "goldfish"):
        with pytest.raises(ValueError, match="cannot be loaded by vlmlens: custom code only.*openai-compatible"):
            registry.load_backend(name)
        with pytest.raises(ValueError, match="cannot be loaded"):
            get_spec(name).check(RunConfig("infinibench", name))


def test_every_roster_entry_has_the_facts_a_table_needs():
    for row in registry.roster():
        spec = get_spec(row["name"])
        assert spec.display and spec.backend in registry.BACKEND_MODULES
        if not spec.name.startswith("tiny-") and not spec.unavailable and spec.name != "gpt-4.1-2025-04-14":
            assert spec.context_tokens, spec.name
    papers = {b for n in registry.known_models() for b in get_spec(n).paper_languages}
    assert papers == {"hintel", "curve", "infinibench"}


def test_the_ledger_records_each_papers_models():
    registry.roster()                                                  # the benchmarks' modules add their rosters and entries
    keys = {e.key for e in fidelity.ledger()}
    for bench, models in (("hintel", HINTEL), ("curve", CURVE), ("infinibench", ["qwen2.5-vl-7b", "gpt-4o", "internvl3-8b"])):
        for m in models:
            assert f"{bench}/model {get_spec(m).display}" in keys, (bench, m)
    gem = fidelity.LEDGER["infinibench/model Gemini 2.0 Flash"]
    assert gem.status == "departure" and gem.switch


def test_models_guide_lists_every_model():
    page = (ROOT / "nbs" / "guides" / "models.md").read_text(encoding="utf-8")
    assert registry.roster_markdown() in page, "nbs/guides/models.md's table differs from registry.roster_markdown()"


def test_sweep_files_name_registered_models():
    for f in sorted((ROOT / "evalnb" / "sweeps").glob("*.yaml")):
        d = yaml.safe_load(f.read_text(encoding="utf-8"))
        models = d.get("grid", {}).get("model", d.get("base", {}).get("model"))
        for m in [models] if isinstance(models, str) else models or []:
            get_spec(m)                                                                     # raises KeyError when unknown


def test_registry_and_api_backends_load_no_local_model_stack():
    code = ("import sys, vlmlens.models.registry, vlmlens.models.anthropic, vlmlens.models.openai, vlmlens.models.gemini;"
            "r = vlmlens.models.registry; r.get_spec('qwen2.5-vl-7b').preset('infinibench'); r.roster();"
            "print(','.join(m for m in ('torch', 'transformers', 'qwen_vl_utils') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == ""


def test_parse_api_name_lives_in_the_registry():
    src = (ROOT / "vlmlens" / "models" / "registry.py").read_text(encoding="utf-8")
    assert "def parse_api_name" in src and "models.api" not in src and "from .api" not in src
    s = get_spec("openai-compatible:Qwen/Qwen2.5-VL-7B-Instruct@http://127.0.0.1:8000/v1")
    assert s.backend == "openai" and s.defaults["base_url"] == "http://127.0.0.1:8000/v1"


# Hand-checked against the papers' rosters (HinTel §4.1 / Tables 3-4; MINERVA-Cultural main table; InfiniBench §4.1):
# (model, benchmark, language, claimed?)
HAND = [("gemini-2.0-flash", "hintel", "te", True), ("gemini-2.0-flash", "hintel", "hi", False),
        ("qwen2.5-vl-7b", "hintel", "te", False), ("qwen2.5-vl-7b", "curve", "te-IN", True),
        ("qwen2.5-vl-7b", "demo", "te", True), ("gemma3-4b", "curve", "ta-IN", False), ("gemma3-4b", "hintel", "hi", True),
        ("claude-sonnet-4", "curve", "zh-TW", True), ("claude-sonnet-4", "hintel", "hi", True),
        ("internvl3-8b", "infinibench", "hi", False), ("chitrarth-8b", "hintel", "te", True), ("gpt-4o", "hintel", "hi", False)]


@pytest.mark.parametrize("model,bench,lang,claimed", HAND)
def test_language_gate_by_hand(model, bench, lang, claimed):
    assert registry.supports_language(model, lang, bench) == claimed


def test_language_gate_is_the_one_captured_before_the_rosters_moved():
    """Every registered model x benchmark x paper language answers as in tests/data/roster_languages.json (see its README
    entry); `languages_for` may list a model's merged languages in another order where no paper evaluates it."""
    import vlmlens.models.api  # noqa: F401  (registers the API model names, as the capture did)
    want = json.loads((ROOT / "tests" / "data" / "roster_languages.json").read_text(encoding="utf-8"))
    langs = sorted({l for m in want.values() for b in m.values() for l in b["supports"]} | {"en", "hi", "te", *CURVE_LOCALES})
    assert set(want) <= set(registry.known_models())
    for model, by_bench in want.items():
        spec = get_spec(model)
        for bench, got in by_bench.items():
            b = None if bench == "(none)" else bench
            lf = spec.languages_for(b)
            if b in spec.paper_languages: assert list(lf) == got["languages_for"], (model, bench)
            else: assert sorted(lf) == sorted(got["languages_for"]), (model, bench)
            assert [l for l in langs if spec.supports_language(l, b)] == got["supports"], (model, bench)


def test_the_registry_names_no_benchmark():
    src = (ROOT / "vlmlens" / "models" / "registry.py").read_text(encoding="utf-8")
    for name in ("curve", "minerva", "hintel", "infinibench"):
        assert f'"{name}"' not in src, name


def test_a_plugin_benchmark_adds_its_papers_roster(tmp_path):
    """A benchmark from a plugin folder says which registered models its paper evaluates, in which languages and with
    which preset; the first model lookup in a fresh process finds it, and nothing in vlmlens is edited."""
    (tmp_path / "swbench.py").write_text(
        "from vlmlens.benchmarks.base import register_benchmark\n"
        "from vlmlens.benchmarks.demo import DemoBenchmark\n"
        "from vlmlens.models import registry\n"
        "class SwBench(DemoBenchmark):\n    name = 'swbench'\n"
        "register_benchmark('swbench', SwBench)\n"
        "registry.add_to_roster('swbench', 'gpt-4o', ('en', 'sw'), {'num_frames': 6, 'source': 'SwBench §3'},\n"
        "                       label='English and Swahili', source='SwBench §3')\n", encoding="utf-8")
    code = ("from vlmlens.models import registry as r; from vlmlens import fidelity as f; s = r.get_spec('gpt-4o');"
            "print(s.supports_language('sw-KE', 'swbench'), s.supports_language('sw', 'infinibench'), s.preset('swbench')['num_frames'],"
            "[x['languages'] for x in r.roster() if x['name'] == 'gpt-4o'][0], 'swbench/model GPT-4o' in f.LEDGER)")
    import os
    env = {**os.environ, "VLMLENS_PLUGINS": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "False", "6", "infinibench:", "en;", "swbench:", "English", "and", "Swahili", "True"]
