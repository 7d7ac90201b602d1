dnl mtaplugin: add these lines to your sendmail.mc, before the MAILER() lines, then
dnl rebuild sendmail.cf (Debian: sendmailconfig; elsewhere: m4 sendmail.mc > sendmail.cf)
dnl and restart sendmail.
dnl
dnl The milter decides every post during the SMTP dialogue, as with Postfix: 550 with the
dnl rule's name, 250 after a hold is stored, 451 when the list database cannot answer.
dnl F=T: when mtaplugin is not running, say 4xx (the sender retries; nothing is lost).
dnl mtaplugin creates the socket mode 0660 (milter.socket_mode, group milter.socket_group);
dnl sendmail's daemon runs as root and connects, other local users cannot.
INPUT_MAIL_FILTER(`mtaplugin', `S=unix:/run/mtaplugin/milter.sock, F=T, T=C:30s;S:60s;R:120s;E:10m')dnl
dnl The SMTP AUTH login reaches the milter (authenticated posters, as with Postfix).
define(`confMILTER_MACROS_ENVFROM', `i, {auth_type}, {auth_authen}, {auth_ssf}, {auth_author}, {mail_mailer}, {mail_host}, {mail_addr}')dnl
dnl
dnl The re-injection listener (outbox.port): mtaplugin's outbox submits notices, released
dnl holds and list copies here; no milter, loopback only.
DAEMON_OPTIONS(`Family=inet, Addr=127.0.0.1, Port=10026, Name=mtaplugin-reinject, InputMailFilters=')dnl
dnl
dnl Which domains hold lists: Sendmail asks mtaplugin's lookup server (part of
dnl `mtaplugin serve', lookup.socket) through a socket map, the protocol Postfix's
dnl socketmap uses.  A recipient in a list domain is accepted here (the milter then says
dnl which addresses are lists: 550 5.1.1 for the others); a domain added with
dnl `mtaplugin domains add' is accepted at once; when the list database cannot answer,
dnl or mtaplugin is down, the answer is 451.  Other recipients go on to your own rules.
dnl (Not FEATURE(`access_db') with a socket map: its relay check turns a lookup that
dnl cannot answer into "550 Relaying denied".)
LOCAL_CONFIG
Kdomains socket -T<TMPF> unix:/run/mtaplugin/lookup.sock
LOCAL_RULESETS
SLocal_check_rcpt
R$*	$: $>Parse0 $>3 $1
R$* < @ $+ . > $*	$: < $(domains $2 $: NOTFOUND $) >
R$* < @ $+ > $*	$: < $(domains $2 $: NOTFOUND $) >
R< <TMPF> >	$#error $@ 4.3.0 $: "451 The list database cannot answer; try again later"
R< NOTFOUND >	$@ NOTFOUND
R< $+ >	$#OK
