#!/bin/sh
# /usr/bin/mtaplugin: the packaged command, with the package's configuration.
# Run as root, it runs as the user mtaplugin (as the service does), so that what a command
# writes (the SQLite database and its journal, DKIM keys) stays readable by the service.
# MTAPLUGIN_AS_ROOT=1 keeps root.  Files you name must then be readable by mtaplugin.
: "${MTAPLUGIN_CONFIG:=/etc/mtaplugin/mtaplugin.toml}"
export MTAPLUGIN_CONFIG
umask 027  # as the service's: the database and keys readable by mtaplugin only
bin=/usr/lib/mtaplugin/venv/bin/mtaplugin
if [ "$(id -u)" = 0 ] && [ -z "$MTAPLUGIN_AS_ROOT" ]; then
    exec setpriv --reuid=mtaplugin --regid=mtaplugin --init-groups \
        env HOME=/var/lib/mtaplugin "$bin" "$@"
fi
exec "$bin" "$@"
