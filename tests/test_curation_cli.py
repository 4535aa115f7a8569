"""`vlmlens curate`: user mistakes print one line and exit 2; status lists a build's steps; a step that produced nothing raises
NothingAnswered (exit 3 through `vlmlens`); every sub-command takes --allow-failures; dedup reports the answer balance."""
import argparse
import json

import pytest

from vlmlens.cli import CURATE_EXTENSIONS
from vlmlens.core import NothingAnswered
from vlmlens.curation import cli as ccli
from vlmlens.curation.store import Step


def parser():
    p = argparse.ArgumentParser(prog="vlmlens"); ccli.add_parser(p.add_subparsers(dest="command"), extensions=CURATE_EXTENSIONS)
    return p


def run(*argv) -> int:
    return ccli.main(parser().parse_args(["curate", *argv]), extensions=CURATE_EXTENSIONS)


def test_user_mistakes_exit_2_with_one_line(tmp_path, capsys):
    cases = [("generate", "--sources", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path)), ("release", "--from", "verify", "--out", str(tmp_path), "--release", str(tmp_path / "r")),
             ("status", str(tmp_path / "nope")), ("appearance", "--out", str(tmp_path)),
             ("verify", "--from", "x", "--out", str(tmp_path), "--verdicts", "v.jsonl"),
             ("dedup", "--from", "generate", "--out", str(tmp_path), "--device", "nonsense"),
             ("generate", "--sources", str(tmp_path), "--out", str(tmp_path / "b")),                     # a folder without sources.jsonl
             ("generate", "--sources", str(tmp_path / "empty.jsonl"), "--out", str(tmp_path / "b")),   # an empty manifest
             ("status", str(tmp_path / "empty_build"))]                                                # a folder with no steps
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "empty_build").mkdir()
    for c in cases:
        assert run(*c) == 2, c
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("vlmlens curate: error: "), (c, err)


def test_a_model_option_for_a_model_not_filtering_is_refused_before_anything_is_written(tmp_path, capsys):
    "`--model-kwarg MODEL:KEY=VALUE` naming no model of `--models` (a typo) would configure nothing: refused, one line, no file."
    st = Step(tmp_path / "b", "generate", {})
    st.process([("v", None)], lambda _, w: w.accept("q0", {"video_id": "v", "skill_name": "global_appearance", "question": "Q?",
                                                           "options": ["a", "b"], "answer_idx": 0}))
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    for c in (("filter", "--from", "generate", "--out", str(tmp_path / "b"), "--models", "gpt-4o,gemini-2.0-flash", "--model-kwarg", "gpt4o:cache=false"),
              ("filter", "--from", "generate", "--out", str(tmp_path / "b"), "--kinds", "knowledge,audio"),
              ("text-filter", "--from", str(st.dir), "--out", str(tmp_path / "b"), "--models", "gpt-4.1,gemini-2.5-flash",
               "--model-kwarg", "gemini-2.5:cache=false")):
        assert run(*c) == 2, c
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"vlmlens curate{' text-filter' if c[0] == 'text-filter' else ''}: error: "), (c, err)
        assert "is not one of --models" in err[0] or "unknown filter(s) ['audio']" in err[0]
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_status_and_dedup_from_a_step_name(tmp_path, capsys):
    st = Step(tmp_path, "generate", {})
    st.process([("v", None)], lambda _, w: [w.accept(f"q{k}", {"video_id": "v", "skill_name": "summarization", "question": q})
                                            for k, q in enumerate(["Summarize the episode.", "Why is the sky blue?"])])
    assert run("dedup", "--from", "generate", "--out", str(tmp_path), "--device", "cpu") == 0
    assert "dedup: 2 items, 0 rejected" in capsys.readouterr().out
    assert run("status", str(tmp_path)) == 0
    out = capsys.readouterr().out
    assert "generate" in out and "dedup" in out


def test_a_sources_folder_is_read_through_its_manifest(tmp_path, capsys):
    from vlmlens.curation.generate import write_demo_sources
    write_demo_sources(tmp_path / "src")
    assert run("generate", "--sources", str(tmp_path / "src"), "--out", str(tmp_path / "b"), "--skills", "nothing_such") == 2
    err = capsys.readouterr().err
    assert "not found" not in err and "nothing_such" in err                    # the folder was read; the mistake is the skill


def test_every_curate_command_takes_allow_failures():
    p = parser()
    sub = next(a for a in p._subparsers._group_actions[0].choices["curate"]._actions if isinstance(a, argparse._SubParsersAction))
    for name, c in sub.choices.items():
        assert any("--allow-failures" in a.option_strings for a in c._actions), name


def test_a_step_whose_every_call_failed_raises_after_saving(server, tmp_path, monkeypatch, capsys):
    from loopback import client_error
    from vlmlens.curation.generate import write_demo_sources
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    server.responder = lambda call: client_error(401, "invalid api key")
    write_demo_sources(tmp_path / "src")
    argv = ["generate", "--sources", str(tmp_path / "src" / "sources.jsonl"), "--out", str(tmp_path / "b"), "--generator", "gpt-4o",
            "--skills", "deep_context_understanding", "--model-kwarg", f"base_url={server.openai_base_url}", "--model-kwarg", "max_attempts=1",
            "--model-kwarg", "cache=false"]
    with pytest.raises(NothingAnswered) as e: run(*argv)                                # what the curation dispatch raises
    assert e.value.exit_code == 3 and "nothing answered (" in str(e.value) and "invalid api key" in str(e.value)
    saved = json.loads(next((tmp_path / "b").glob("generate-*/summary.json")).read_text())
    assert saved["n_items"] == 0 and saved["n_failed"] >= 1                         # the step and its summary are saved
    assert "generate: 0 items" in capsys.readouterr().out
    from vlmlens.cli import main                                                     # and what `vlmlens curate ...` exits with
    assert main(["curate", *argv]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("vlmlens: error: curate generate") and "invalid api key" in err[0]    # one line
    assert main(["curate", *argv, "--allow-failures"]) == 0


def test_a_partly_failed_step_exits_1_and_names_the_failed_units_on_one_line(server, tmp_path, monkeypatch, capsys):
    "The first generator call fails: the other episodes' items are kept, the command exits 1 and one stderr line counts the failure."
    from loopback import server_error
    from test_curation_generate import gpt4o_like
    from vlmlens.cli import main
    from vlmlens.curation.generate import write_demo_sources
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    server.responder = gpt4o_like
    server.script(server_error(500))
    write_demo_sources(tmp_path / "src")
    argv = ["generate", "--sources", str(tmp_path / "src" / "sources.jsonl"), "--out", str(tmp_path / "b"), "--generator", "gpt-4o",
            "--skills", "deep_context_understanding,linking_multiple_events", "--model-kwarg", f"base_url={server.openai_base_url}", "--model-kwarg", "max_attempts=1",
            "--model-kwarg", "cache=false"]
    assert main(["curate", *argv]) == 1
    out, err = capsys.readouterr()
    assert "generate: " in out and not out.startswith("generate: 0 items")
    err = err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("1 unit(s) failed; rerun the same command to retry them (e.g. ") and "500" in err[0], err
    assert main(["curate", *argv]) == 0 and capsys.readouterr().err == ""                  # the rerun retries it


def test_dedup_command_flags_and_prints_the_answer_balance(tmp_path, capsys):
    up = Step(tmp_path, "generate", {})
    qs = [("q0", "Did the event 'Joey buys a duck' happen before the event 'Chandler moves out'?", 0),
          ("q1", "Did the event 'Joey buys a duck' happen after the event 'Chandler moves out'?", 1)]
    up.process([("v", None)], lambda _, w: [w.accept(i, {"video_id": "v", "skill_name": "chronological_understanding", "question": q,
                                                         "options": ["Yes", "No"], "answer_idx": g}) for i, q, g in qs])
    assert run("dedup", "--from", "generate", "--out", str(tmp_path), "--threshold", "0.9", "--device", "cpu") == 0
    out = capsys.readouterr().out
    assert "dedup: 2 items, 0 rejected" in out and "1 near-duplicate pair(s) flagged" in out
    assert "answers chronological_understanding: No 1, Yes 1 -> No 1, Yes 1" in out
    assert run("dedup", "--from", "generate", "--out", str(tmp_path), "--threshold", "0.9", "--drop", "--device", "cpu") == 0
    out = capsys.readouterr().out
    assert "dedup: 2 items, 0 rejected" in out and "answers chronological_understanding: No 1, Yes 1 -> No 1, Yes 1" in out   # opposite answers: both kept
    from vlmlens.curation.dedup import PAIR_LABELS
    from vlmlens.curation.review import VerdictLog
    VerdictLog(tmp_path / "pairs.jsonl", PAIR_LABELS).append("q0~q1", "alice", "distinct", note="before vs after")
    assert run("dedup", "--from", "generate", "--out", str(tmp_path), "--threshold", "0.9", "--verdicts", str(tmp_path / "pairs.jsonl"),
               "--device", "cpu") == 0
    assert "dedup: 2 items, 0 rejected" in capsys.readouterr().out                  # reviewed as distinct: both kept
    assert run("dedup", "--from", "generate", "--out", str(tmp_path), "--verdicts", str(tmp_path / "none.jsonl")) == 2


@pytest.mark.parametrize("broken", ["every call fails", "every output unparseable"])
def test_a_generator_that_decided_nothing_exits_3_though_call_free_items_exist(server, tmp_path, monkeypatch, capsys, broken):
    "Summarization items need no call; a generator that failed or answered junk on every call still decided nothing: exit 3, one line."
    from loopback import server_error
    from vlmlens.cli import main
    from vlmlens.curation.generate import write_demo_sources
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key.not-real.0000000000")
    server.responder = (lambda call: server_error(500)) if broken == "every call fails" else (lambda call: "Sure! Here are the questions you asked for.")
    write_demo_sources(tmp_path / "src")
    argv = ["curate", "generate", "--sources", str(tmp_path / "src" / "sources.jsonl"), "--out", str(tmp_path / "b"), "--generator", "gpt-4o",
            "--skills", "deep_context_understanding,summarization", "--model-kwarg", f"base_url={server.openai_base_url}",
            "--model-kwarg", "max_attempts=1", "--model-kwarg", "cache=false"]
    assert main(argv) == 3
    out, err = capsys.readouterr()
    err = err.strip().splitlines()
    cause = "500" if broken == "every call fails" else "generator output unparseable"
    assert len(err) == 1 and "curate generate" in err[0] and "decided nothing: 0 of 1 generator outputs valid" in err[0] and cause in err[0], err
    saved = json.loads(next((tmp_path / "b").glob("generate-*/summary.json")).read_text())
    assert saved["n_items"] >= 1 and saved["decisions"]["generator"]["n_valid"] == 0      # the call-free items are there, and the count says why it failed


def test_a_prefixed_engine_option_is_an_option_not_a_traceback(tmp_path, capsys):
    "--engine-option aws:endpoint_url=… on `translate --engine aws` is the engine's option; an option the engine does not take is one line."
    (tmp_path / "r.jsonl").write_text(json.dumps({"id": "1", "question": "Which one is red?"}) + "\n")
    base = ["curate", "translate", "--records", str(tmp_path / "r.jsonl"), "--out", str(tmp_path / "b"), "--engine", "aws", "--target", "te"]
    from vlmlens.cli import main
    for opt, want in (("azure:region=eastus", "names the engine 'azure', but --engine is 'aws'"),
                      ("aws:colour=blue", "translation engine aws: an option it does not take")):
        assert main([*base, "--engine-option", opt]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and want in err[0], err


def test_every_command_line_reads_a_mistake_alike(tmp_path, capsys, monkeypatch):
    """`vlmlens`, `vlmlens curate` and `vlmlens curate <extension>` print a mistake through one rule (`core.user_mistake`):
    a path the OS refuses is the path and the reason (any refusal, not only a missing file), exit 2."""
    from vlmlens.cli import main
    def refused(args): raise PermissionError(13, "Permission denied", str(tmp_path / "locked"))
    with monkeypatch.context() as m:
        m.setattr(ccli, "_dispatch", refused)
        assert run("status", str(tmp_path)) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"vlmlens curate: error: {tmp_path / 'locked'}: Permission denied"]
    for argv, prog in ((["curate", "status", str(tmp_path / "nope")], "vlmlens curate"),
                       (["curate", "translate", "--records", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "t"),
                         "--target", "hi", "--engine", "google"], "vlmlens curate translate"),
                       (["score", str(tmp_path / "no-run")], "vlmlens")):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"{prog}: error: ") and "Errno" not in err[0], (argv, err)
