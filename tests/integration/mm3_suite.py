"""A Mailman 3 suite as its people make it (issue 31's acceptance): GNU Mailman 3.3.10 core
archiving to HyperKitty through the ``mailman-hyperkitty`` plugin, and a mailman-web
project (Postorius, HyperKitty, django-mailman3, allauth: one Django database)
(:mod:`mtaplugin.testing.mailman_core`, :mod:`mtaplugin.testing.mailman_web`).

:func:`build` fills it the way a site fills up: the admin makes two domains and five lists
over Mailman's REST API (what Postorius's forms do); three people sign up on allauth's
sign-up page, confirm their address with the link mailed to them and log in; two of them
subscribe from Postorius's list page (Ann with "Primary Address": an ``as_user``
membership), one more person asks to join a list that wants a confirmation, from
Postorius's anonymous form (Mailman mails the token and waits); members post a thread of
three that Mailman's runners archive in HyperKitty, and a stranger's post is held; then
Ann adds a second address on allauth's e-mail page and makes it her primary one.
Everything goes over HTTP as a browser sends it (forms with Django's CSRF token)."""

from __future__ import annotations

import email
import http.cookiejar
import re
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from email.message import EmailMessage, Message
from email.policy import compat32
from email.utils import formatdate
from pathlib import Path
from typing import Any

from mtaplugin.testing.mailman_core import DELIVER, MailmanCore
from mtaplugin.testing.postorius_venv import PostoriusSite
from tests.unit.webclient import form_of

DOMAINS = ("mm3suite.test", "mm3other.test")
#: the suite's five lists
DEV, ANNOUNCE, TALK = (f"{n}@{DOMAINS[0]}" for n in ("dev", "announce", "talk"))
USERS, TEAM = (f"{n}@{DOMAINS[1]}" for n in ("users", "team"))
LISTS = (DEV, ANNOUNCE, TALK, USERS, TEAM)
#: the people who sign up on Postorius: their address and password, by user name
PEOPLE = {
    "ann": ("ann@people.example", "Ann's Postorius pa55"),
    "bob": ("bob@people.example", "Bob's Postorius pa55"),
    "carol": ("carol@people.example", "Carol's Postorius pa55"),
}
#: the address Ann adds after she subscribed, and makes her primary one
ANN_AT_WORK = "ann.work@people.example"
#: who asks to join announce (confirm policy) from Postorius's anonymous form
PENDING = "dora@people.example"
STRANGER = "stranger@people.example"
#: the thread the members post to dev (archived in HyperKitty), and the held post's id
THREAD = ("<plans.1@people.example>", "<plans.2@people.example>", "<plans.3@people.example>")
HELD = "<held.1@people.example>"


class Browser:
    """A person's browser on the suite's web site: cookies kept, redirects followed,
    forms posted as the page has them, with Django's CSRF token."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))

    def get(self, path: str) -> tuple[str, str]:
        """The page at ``path`` (or a full URL): its final URL and text."""
        url = path if "://" in path else self.base + path
        with self.opener.open(url, timeout=120) as answer:
            return answer.geturl(), answer.read().decode()

    def submit(self, page: str, action: str, **values: str) -> tuple[str, str]:
        """Fill in the form of ``page`` that posts to ``action`` (or to a URL that begins
        so: allauth's confirmation form signs the time into it) and send it."""
        _url, html = self.get(page)
        targets = re.findall(r'<form[^>]*action="([^"]*)"', html)
        found = [t for t in targets if urllib.parse.unquote(t).startswith(action)]
        assert found, f"no form to {action} on {page}: {targets}"
        fields = dict(form_of(html, found[0]))
        assert "csrfmiddlewaretoken" in fields, f"no CSRF token in the form to {found[0]}"
        fields.update(values)
        data = urllib.parse.urlencode(fields).encode()
        request = urllib.request.Request(self.base + found[0], data=data, method="POST")
        with self.opener.open(request, timeout=120) as answer:
            return answer.geturl(), answer.read().decode()


def _mails_to(web: PostoriusSite, address: str) -> list[Message]:
    """What Django mailed ``address`` (its file backend keeps one file per message)."""
    found = []
    for path in sorted(web.mail_dir.iterdir()):
        msg = email.message_from_bytes(path.read_bytes(), policy=compat32)
        if address in str(msg["To"]):
            found.append(msg)
    return found


def confirm(web: PostoriusSite, browser: Browser, address: str) -> None:
    """Follow the link allauth mailed to ``address`` and confirm it there."""
    (mail,) = _mails_to(web, address)
    body = mail.get_payload(decode=True)
    assert isinstance(body, bytes)
    link = re.search(r"http://\S+/accounts/confirm-email/\S+/", body.decode())
    assert link, body
    browser.submit(urllib.parse.urlsplit(link.group(0)).path, "/accounts/confirm-email/")


def sign_up(web: PostoriusSite, name: str) -> Browser:
    """``name`` signs up on allauth's page, follows the link mailed to confirm the
    address, and logs in: a browser with the person's session."""
    address, password = PEOPLE[name]
    browser = Browser(web.url)
    browser.submit(
        "/accounts/signup/", "/accounts/signup/",
        email=address, username=name, password1=password, password2=password,
    )  # fmt: skip
    confirm(web, browser, address)
    url, _page = browser.submit("/accounts/login/", "/accounts/login/", login=name,
                                password=password)  # fmt: skip
    assert "/accounts/login" not in url, f"{name} could not log in: {url}"
    return browser


def make_primary(web: PostoriusSite, browser: Browser, address: str) -> None:
    """The person adds ``address`` on allauth's e-mail page, confirms it, and makes it
    primary: django-mailman3 makes it the core user's preferred address."""
    browser.submit("/accounts/email/", "/accounts/email/", email=address, action_add="")
    confirm(web, browser, address)
    browser.submit("/accounts/email/", "/accounts/email/", email=address, action_primary="")


def list_page(fqdn: str) -> str:
    return f"/postorius/lists/{fqdn.replace('@', '.')}/"


def subscribe(browser: Browser, fqdn: str, primary: bool = False) -> None:
    """Subscribe from the list's Postorius page: the first choice is "Primary Address"
    (the user: ``as_user``) when ``primary``, else the person's address."""
    page = list_page(fqdn)
    _url, html = browser.get(page)
    choices = re.findall(r'<option value="([^"]+)"', html.split('name="subscriber"', 1)[1])
    subscriber = choices[0] if primary else next(c for c in choices if "@" in c)
    _url, html = browser.submit(page, page + "subscribe", subscriber=subscriber)
    assert "You are subscribed" in html, html[-3000:]


def post(sender: str, to: str, subject: str, message_id: str, reply_to: str = "") -> bytes:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Message-ID"] = message_id
    msg["Date"] = formatdate(localtime=True)
    if reply_to:
        msg["In-Reply-To"] = reply_to
        msg["References"] = reply_to
    msg.set_content(f"{subject}: said in {message_id}\n")
    return msg.as_bytes()


@dataclass
class Suite:
    core: MailmanCore
    web: PostoriusSite
    #: the Mailman user id of each person (hex), by user name
    user_ids: dict[str, str] = field(default_factory=dict)
    #: the confirmation Mailman mailed the person who asked to join announce
    confirmation: Message | None = None
    #: the posts Mailman sent the members (with HyperKitty's links in ``Archived-At``)
    delivered: list[Message] = field(default_factory=list)

    def client(self) -> Any:
        return self.core.client()


def build(core: MailmanCore, web: PostoriusSite, work: Path) -> Suite:
    """The suite, filled as the module's docstring says."""
    suite = Suite(core, web)
    mm = core.client()
    a = mm.create_domain(DOMAINS[0], description="The suite's lists")
    b = mm.create_domain(DOMAINS[1])
    dev, announce, talk = (a.create_list(n.split("@")[0]) for n in (DEV, ANNOUNCE, TALK))
    users, team = (b.create_list(n.split("@")[0]) for n in (USERS, TEAM))
    for mlist in (dev, announce, talk, users, team):
        mlist.add_owner("owner@people.example")
    settings = dev.settings
    settings["accept_these_nonmembers"] = [f"@{USERS}"]  # members of users may post
    settings.save()
    settings = announce.settings
    settings["subscription_policy"] = "confirm"
    settings.save()

    browsers = {name: sign_up(web, name) for name in PEOPLE}
    subscribe(browsers["ann"], DEV, primary=True)
    subscribe(browsers["bob"], DEV)
    subscribe(browsers["bob"], TALK)
    subscribe(browsers["carol"], USERS)
    stranger = Browser(web.url)
    page = list_page(ANNOUNCE)
    _url, html = stranger.submit(page, page + "anonymous_subscribe", email=PENDING,
                                 display_name="Dora")  # fmt: skip
    assert "Please check your inbox" in html, html[-3000:]
    for name in PEOPLE:
        suite.user_ids[name] = str(mm.get_user(PEOPLE[name][0]).user_id).replace("-", "")

    ann, bob = PEOPLE["ann"][0], PEOPLE["bob"][0]
    posts = [
        (DEV, post(ann, DEV, "Plans", THREAD[0])),
        (DEV, post(bob, DEV, "Re: Plans", THREAD[1], reply_to=THREAD[0])),
        (DEV, post(ann, DEV, "Re: Plans", THREAD[2], reply_to=THREAD[1])),
        (TEAM, post(STRANGER, TEAM, "Anyone there?", HELD)),
    ]
    argv = []
    for n, (fqdn, raw) in enumerate(posts):
        path = work / f"post{n}.eml"
        path.write_bytes(raw)
        argv += [fqdn, str(path)]
    core.script(DELIVER, *argv)
    make_primary(web, browsers["ann"], ANN_AT_WORK)
    for msg in core.queued("virgin"):
        if PENDING in str(msg["To"]) and "-confirm+" in str(msg["From"]):
            suite.confirmation = msg
    suite.delivered = core.queued("out")
    assert mm.get_list(TEAM).get_held_count() == 1  # the stranger's post, held by Mailman
    return suite
