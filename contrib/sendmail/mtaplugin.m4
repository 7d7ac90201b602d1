dnl mtaplugin: add these lines to your sendmail.mc, before the MAILER() lines, then
dnl rebuild sendmail.cf (Debian: sendmailconfig; elsewhere: m4 sendmail.mc > sendmail.cf)
dnl and restart sendmail.
dnl
dnl The milter decides every post during the SMTP dialogue, as with Postfix: 550 with the
dnl rule's name, 250 after a hold is stored, 451 when the list database cannot answer.
dnl F=T: when mtaplugin is not running, say 4xx (the sender retries; nothing is lost).
dnl Sendmail runs the milter as root or smmsp: mtaplugin creates the socket mode 0666.
INPUT_MAIL_FILTER(`mtaplugin', `S=unix:/run/mtaplugin/milter.sock, F=T, T=C:30s;S:60s;R:120s;E:10m')dnl
dnl The SMTP AUTH login reaches the milter (authenticated posters, as with Postfix).
define(`confMILTER_MACROS_ENVFROM', `i, {auth_type}, {auth_authen}, {auth_ssf}, {auth_author}, {mail_mailer}, {mail_host}, {mail_addr}')dnl
dnl Which domains hold lists: Sendmail asks mtaplugin's lookup server (part of
dnl `mtaplugin serve`, lookup.socket) over its socket map, the same protocol Postfix uses.
dnl A list domain is a relay destination ("To:lists.example.org" answers RELAY);
dnl everything else is NOTFOUND and your own rules apply.  -T<TMPF>: 4xx when mtaplugin
dnl cannot answer.
FEATURE(`access_db', `socket -T<TMPF> unix:/run/mtaplugin/lookup.sock')dnl
dnl The re-injection listener (outbound.port): mtaplugin's outbox submits notices, released
dnl holds and list copies here; no milter, loopback only.
DAEMON_OPTIONS(`Family=inet, Addr=127.0.0.1, Port=10026, Name=mtaplugin-reinject, InputMailFilters=')dnl
