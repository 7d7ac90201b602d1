"""``mtaplugin check --exim FILE`` reads Exim's configuration with contrib/exim pasted
in, and names each way the paste breaks mtaplugin's promises: the router without its
domain condition (an outage defers all mail), the RCPT snippet after an ``accept`` (posts
from those clients decided only at delivery: backscatter), and the RCPT question asked
for every domain.  The harm of each is shown through a real Exim in
tests/integration/test_exim_outage.py."""

from __future__ import annotations

from pathlib import Path

from mtaplugin.check import Level, exim

CONTRIB = Path(__file__).resolve().parents[2] / "contrib" / "exim"


def _config(tmp_path: Path, rcpt_first: bool = True, edit: tuple[str, str] | None = None) -> Path:
    """Debian's shape: main options, the contrib main section, a RCPT ACL with the
    default configuration's accept statements, and the contrib routers."""
    snippets = {
        n: (CONTRIB / n).read_text() for n in ("main.conf", "acl_rcpt.conf", "routers.conf")
    }
    if edit is not None:
        for name, text in snippets.items():
            snippets[name] = text.replace(*edit)
    accepts = "  accept  hosts = +relay_from_hosts\n  accept  authenticated = *\n"
    rcpt = (
        snippets["acl_rcpt.conf"] + accepts if rcpt_first else accepts + snippets["acl_rcpt.conf"]
    )
    text = f"""\
primary_hostname = mx.example.org
acl_smtp_rcpt = acl_check_rcpt
{snippets["main.conf"]}
begin acl

acl_check_rcpt:
{rcpt}
  require domains = +local_domains : +relay_to_domains
  accept

begin routers

{snippets["routers.conf"]}
dnslookup:
  driver = dnslookup
  transport = remote_smtp
"""
    path = tmp_path / "exim4.conf"
    path.write_text(text)
    return path


def _levels(path: Path) -> dict[str, Level]:
    return {f.check: f.level for f in exim.check(path)}


def test_contrib_pasted_as_the_docs_say_is_all_ok(tmp_path: Path) -> None:
    assert _levels(_config(tmp_path)) == {"exim.router": Level.ok, "exim.acl_rcpt": Level.ok}


def test_the_router_without_its_domain_condition_is_an_error(tmp_path: Path) -> None:
    path = _config(tmp_path, edit=("  domains = +mtaplugin_list_domains\n", ""))
    [router] = [f for f in exim.check(path) if f.check == "exim.router"]
    assert router.level == Level.error and "defers all mail" in router.found
    assert "domains = +mtaplugin_list_domains" in router.fix


def test_the_rcpt_snippet_after_an_accept_is_an_error(tmp_path: Path) -> None:
    [acl] = [
        f for f in exim.check(_config(tmp_path, rcpt_first=False)) if f.check == "exim.acl_rcpt"
    ]
    assert acl.level == Level.error
    assert "accept  hosts = +relay_from_hosts" in acl.found and "bounce" in acl.found


def test_the_rcpt_question_for_every_domain_is_an_error(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        edit=("  warn    domains = +mtaplugin_list_domains\n          set", "  warn    set"),
    )
    [acl] = [f for f in exim.check(path) if f.check == "exim.acl_rcpt"]
    assert acl.level == Level.error and "451" in acl.found


def test_included_files_are_read_in_their_place(tmp_path: Path) -> None:
    whole = _config(tmp_path).read_text()
    head, _sep, routers = whole.partition("begin routers\n")
    (tmp_path / "routers.conf").write_text(routers)
    main = tmp_path / "main.conf"
    main.write_text(f"{head}begin routers\n.include {tmp_path}/routers.conf\n")
    assert _levels(main)["exim.router"] == Level.ok


def test_an_unreadable_file_is_a_warning_that_names_it(tmp_path: Path) -> None:
    [found] = exim.check(tmp_path / "missing.conf")
    assert found.level == Level.warning and "missing.conf" in found.found
