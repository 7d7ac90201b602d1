"""docs/reference/ is generated from the code's own tables: the committed pages name every
list setting, posting rule, CLI command, REST route, configuration key and periodic job,
and are exactly what ``make docs`` writes now (so a stale page fails the build)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from mtaplugin.config.sections import SECTIONS
from mtaplugin.docs import cli_page, markdown, reference, rest_page, rules_page
from mtaplugin.posting.pipeline import POSTING_RULES
from mtaplugin.web import list_settings, setting_help
from mtaplugin.web.list_settings import GROUPS
from mtaplugin.worker.registry import JOBS

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / reference.REFERENCE_DIR
HOW = (
    f"run `{reference.REGENERATE}` (python -m mtaplugin.docs.reference) and commit docs/reference/"
)


def committed(name: str) -> str:
    path = PAGES / name
    assert path.is_file(), f"{path} is missing: {HOW}"
    return path.read_text()


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return reference.render()


@pytest.mark.parametrize("name", list(reference.PAGES))
def test_the_committed_page_is_what_the_generator_writes_now(
    name: str, rendered: dict[str, str]
) -> None:
    assert committed(name) == rendered[name], f"docs/reference/{name} is stale: {HOW}"


def _table_keys(text: str) -> list[str]:
    """The first cell of every table row, without its backticks."""
    return [m[1] for m in re.finditer(r"^\| `([^`]+)` \|", text, re.M)]


def _rows(page: str) -> dict[str, str]:
    """A reference page's table rows, by their first cell."""
    return {key: line for line in page.splitlines() for key in _table_keys(line)}


def test_every_list_setting_is_in_the_reference() -> None:
    listed = _table_keys(committed("settings.md"))
    for _title, names in GROUPS.values():
        for name in names:
            assert name in listed, f"setting {name} is not in docs/reference/settings.md: {HOW}"


def test_every_posting_rule_is_in_the_reference_in_order() -> None:
    text = committed("rules.md")
    listed = re.findall(r"^\| \d+ \| `([a-z-]+)` \|", text, re.M)
    assert listed == [r.id for r in POSTING_RULES], f"docs/reference/rules.md: {HOW}"


def test_every_posting_rule_says_when_it_hits() -> None:
    for rule in POSTING_RULES:
        assert rules_page.rule_when(rule) != markdown.NO_HELP, (
            f"{rule.id}: give {rule.check.__module__}.{rule.check.__name__} a docstring "
            f"(or start its module's docstring with '{rule.id}: ')"
        )
    by_id = {r.id: r for r in POSTING_RULES}
    assert rules_page.rule_when(by_id["max-size"]).startswith("a post larger than")  # module's
    assert "bounce_matching_headers" in rules_page.rule_when(by_id["suspicious-header"])


def test_every_cli_command_is_in_the_reference() -> None:
    text = committed("cli.md")
    commands = list(cli_page.cli_commands())
    assert len(commands) > 30  # the walk really reached the leaves
    for words, _help, _parser in commands:
        title = "## mtaplugin " + " ".join(words)
        assert f"\n{title}\n" in text, f"`mtaplugin {' '.join(words)}` is not in cli.md: {HOW}"


def test_every_rest_route_and_method_is_in_the_reference() -> None:
    rows = {
        m[1]: m[2]
        for m in re.finditer(r"^\| `(/[^`]*)` \| ([A-Z, ]+) \|", committed("rest.md"), re.M)
    }
    routes = rest_page.rest_routes()
    assert len(routes) > 50
    for path, methods, _ops in routes:
        assert path in rows, f"REST path {path} is not in docs/reference/rest.md: {HOW}"
        assert rows[path] == ", ".join(methods), f"{path}: {HOW}"


def test_every_configuration_key_is_in_the_reference() -> None:
    listed = _table_keys(committed("configuration.md"))
    keys = [f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in dataclasses.fields(cls)]
    assert "milter.socket" in keys
    for key in keys:
        assert key in listed, f"{key} is not in docs/reference/configuration.md: {HOW}"


def test_every_periodic_job_is_in_the_reference() -> None:
    listed = _table_keys(committed("jobs.md"))
    assert [job.name for job in JOBS] == listed, f"docs/reference/jobs.md: {HOW}"


def test_a_key_s_comment_is_its_documentation() -> None:
    rows = _rows(reference.render()["configuration.md"])
    assert "`MTAPLUGIN_DNS_ON_FAILURE`" in rows["dns.on_failure"]
    assert "what a DMARC policy lookup that DNS cannot answer gives" in rows["dns.on_failure"]
    assert "| `sqlite:////var/lib/mtaplugin/mtaplugin.db` |" in rows["database.url"]


def test_a_setting_added_to_a_page_makes_the_reference_stale(
    monkeypatch: pytest.MonkeyPatch, rendered: dict[str, str]
) -> None:
    group = dict(GROUPS)
    title, names = group["list-identity"]
    group["list-identity"] = (title, (*names, "emergency"))
    monkeypatch.setattr(list_settings, "GROUPS", group)
    with_it = reference.render()["settings.md"]
    assert with_it != rendered["settings.md"]
    assert _table_keys(with_it).count("emergency") == 2


def test_a_setting_without_help_says_so_and_one_with_help_shows_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        setting_help,
        "SETTING_HELP",
        {"advertised": setting_help.SettingHelp("Listed", "Shown on the index page.")},
    )
    rows = _rows(reference.render()["settings.md"])
    assert "| Listed |" in rows["advertised"]
    assert "Shown on the index page." in rows["advertised"]
    assert rows["description"].endswith(f"| {markdown.NO_HELP} |")
    # the field's own label meanwhile
    assert f"| {list_settings.field_of('description').label} |" in rows["description"]


def test_no_setting_is_marked_not_active(rendered: dict[str, str]) -> None:
    assert "not active yet" not in rendered["settings.md"]


def test_the_defaults_are_those_of_a_list_the_code_creates(rendered: dict[str, str]) -> None:
    rows = _rows(rendered["settings.md"])
    assert "| `[Team] ` |" in rows["subject_prefix"]  # set by lists.create, not a column default
    # the announce style's own changes, read from a list created with it
    announce = rows["legacy-announce"]
    assert "`default_nonmember_action` = `reject`" in announce


def test_check_mode_reports_a_stale_page_and_writes_nothing(tmp_path: Path) -> None:
    assert reference.main(["--out", str(tmp_path)]) == 0
    assert reference.main(["--out", str(tmp_path), "--check"]) == 0
    (tmp_path / "rules.md").write_text("old\n")
    assert reference.main(["--out", str(tmp_path), "--check"]) == 1
    assert (tmp_path / "rules.md").read_text() == "old\n"


def test_a_positional_argument_without_help_gets_its_usual_meaning(
    rendered: dict[str, str],
) -> None:
    held = rendered["cli.md"].split("\n## mtaplugin held approve\n", 1)[1].split("\n## ", 1)[0]
    assert "| `ID...` | a held post's id (`mtaplugin held list`) |" in held
    assert "| `--as EMAIL` | who acts (audit log) |" in held  # its own help wins
