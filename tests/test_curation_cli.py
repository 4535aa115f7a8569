"""`vlmlens curate`: user mistakes print one line and exit 2; status lists a build's steps."""
import argparse

from vlmlens.curation import cli as ccli
from vlmlens.curation.store import Step


def run(*argv) -> int:
    p = argparse.ArgumentParser(prog="vlmlens"); ccli.add_parser(p.add_subparsers(dest="command"))
    return ccli.main(p.parse_args(["curate", *argv]))


def test_user_mistakes_exit_2_with_one_line(tmp_path, capsys):
    cases = [("generate", "--sources", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path)), ("release", "--from", "verify", "--out", str(tmp_path), "--release", str(tmp_path / "r")),
             ("status", str(tmp_path / "nope")), ("appearance", "--out", str(tmp_path)),
             ("verify", "--from", "x", "--out", str(tmp_path), "--verdicts", "v.jsonl"),
             ("dedup", "--from", "generate", "--out", str(tmp_path), "--device", "nonsense")]
    for c in cases:
        assert run(*c) == 2, c
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("vlmlens curate: error: "), (c, err)


def test_status_and_dedup_from_a_step_name(tmp_path, capsys):
    st = Step(tmp_path, "generate", {})
    st.process([("v", None)], lambda _, w: [w.accept(f"q{k}", {"video_id": "v", "skill_name": "summarization", "question": q})
                                            for k, q in enumerate(["Summarize the episode.", "Why is the sky blue?"])])
    assert run("dedup", "--from", "generate", "--out", str(tmp_path), "--flag-only", "--device", "cpu") == 0
    assert "dedup: 2 items, 0 rejected" in capsys.readouterr().out
    assert run("status", str(tmp_path)) == 0
    out = capsys.readouterr().out
    assert "generate" in out and "dedup" in out
