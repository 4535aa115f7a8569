"""The `thinking=true|false` option of local transformers models: passed to chat templates that take `enable_thinking`
(Qwen3 / Qwen3-VL style), recorded in the run hash, refused in one line for a template without the switch. The tiny
Qwen3-VL checkpoint is copied and its template given the branch Qwen3's own template has after the generation prompt
(Qwen/Qwen3-8B tokenizer_config.json: `enable_thinking is defined and enable_thinking is false` -> an empty think block)."""
import json
import shutil

import pytest

from vlmlens.cli import main
from vlmlens.core import Request, RunConfig, message
from vlmlens.models import transformers as tb

SWITCH = "{% if add_generation_prompt and enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}"
CONV = [{"role": "user", "content": [{"type": "text", "text": "Which colour is the car?"}]}]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("ckpt")
    plain, switched = root / "plain", root / "switched"
    shutil.copytree(tb.tiny_checkpoint("qwen3_vl"), plain)
    shutil.copytree(plain, switched)
    tpl = switched / "chat_template.jinja"
    tpl.write_text(tpl.read_text() + SWITCH)
    return plain, switched


def test_the_switch_reaches_the_rendered_prompt(checkpoints):
    _, switched = checkpoints
    texts, n_tokens = {}, {}
    for v in (None, "true", "false"):
        b = tb.TransformersBackend(str(switched), thinking=v)
        texts[v] = b.chat_text(CONV)
        n_tokens[v] = int(b.prepare_inputs([Request("s", [message("user", "Which colour is the car?")])])["input_ids"].shape[1])
        assert b.info()["thinking"] == (None if v is None else v == "true")
        b.close()
    assert texts["false"] == texts[None] + "<think>\n\n</think>\n\n"      # off: the template closes an empty think block
    assert texts["true"] == texts[None] and texts["true"].endswith("<|im_start|>assistant\n")
    assert n_tokens["false"] > n_tokens["true"] == n_tokens[None]              # what the model reads differs too


def test_the_option_is_in_the_run_hash_and_the_run_records_it(checkpoints, tmp_path):
    _, switched = checkpoints
    hashes = {v: RunConfig("demo", str(switched), model_kwargs={} if v is None else {"thinking": v}).hash() for v in (None, True, False)}
    assert len(set(hashes.values())) == 3
    assert RunConfig("demo", str(switched), model_kwargs={"thinking": False, "progress": False}).hash() == hashes[False]
    rc = main(["run", "--benchmark", "demo", "--model", str(switched), "--modality", "text", "--limit", "2", "--model-kwarg", "thinking=false",
               "--output-root", str(tmp_path), "--run-name", "off", "--no-progress"])
    assert rc in (0, None, 3)
    info = json.loads((tmp_path / "off" / "run.json").read_text())
    assert info["model"]["thinking"] is False and info["config"]["model_kwargs"]["thinking"] in (False, "false")
    assert info["config_hash"] != RunConfig("demo", str(switched), modality="text", limit=2).hash()


def test_a_template_without_the_switch_is_refused_before_loading(checkpoints, tmp_path, capsys):
    plain, _ = checkpoints
    rc = main(["run", "--benchmark", "demo", "--model", str(plain), "--limit", "2", "--model-kwarg", "thinking=true",
               "--output-root", str(tmp_path / "runs"), "--no-progress"])
    err = [l for l in capsys.readouterr().err.splitlines() if l.startswith("vlmlens:")]
    assert rc == 2 and len(err) == 1 and "no enable_thinking switch" in err[0]
    assert not (tmp_path / "runs").exists()
    with pytest.raises(ValueError, match="no enable_thinking switch"):          # loaded directly: refused before any generation
        tb.TransformersBackend(str(plain), thinking=False)


def test_a_template_seen_only_once_loaded_is_refused_with_nothing_left(checkpoints, tmp_path, capsys, monkeypatch):
    "A hub checkpoint whose template is not on disk yet: the refusal comes once the processor is loaded, and leaves nothing."
    plain, _ = checkpoints
    monkeypatch.setattr(tb, "template_on_disk", lambda *a, **k: None)
    rc = main(["run", "--benchmark", "demo", "--model", str(plain), "--limit", "2", "--model-kwarg", "thinking=false",
               "--output-root", str(tmp_path / "runs"), "--run-name", "r", "--no-progress"])
    err = [l for l in capsys.readouterr().err.splitlines() if l.startswith("vlmlens:")]
    assert rc == 2 and len(err) == 1 and "no enable_thinking switch" in err[0]
    assert not (tmp_path / "runs" / "r").exists()
