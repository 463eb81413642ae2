"""The server-side diff (no network)."""

from stockade.model_api.console.prompts.diff import diff_lines, prompt_text


def test_diff_rows_keep_context_and_mark_gaps():
    old = "\n".join(f"line {i}" for i in range(1, 21))
    new = old.replace("line 2\n", "line two\n").replace("line 19", "line nineteen")
    rows = diff_lines(old, new)
    kinds = [r.kind for r in rows]
    assert kinds.count("removed") == 2 and kinds.count("added") == 2 and kinds.count("gap") == 1
    assert [r.text for r in rows if r.kind == "added"] == ["line two", "line nineteen"]
    first_added = next(r for r in rows if r.kind == "added")
    assert (first_added.old, first_added.new) == (None, 2)
    assert diff_lines(old, old) == []


def test_prompt_text_shows_roles_and_the_config():
    text = prompt_text(
        [{"role": "system", "content": "Be <b>kind</b>."}, {"role": "user", "content": "{q}"}],
        {"temperature": 0.2},
    )
    assert text.splitlines() == [
        "[system]",
        "Be <b>kind</b>.",
        "",
        "[user]",
        "{q}",
        "",
        "--- config ---",
        "{",
        '  "temperature": 0.2',
        "}",
    ]
    assert prompt_text("plain", None) == "plain"
