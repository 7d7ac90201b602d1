#!/bin/sh
# Builds the Debian package (make deb): packaging/deb/build.sh [OUTDIR]  -> OUTDIR/*.deb
#
# Debian's python3 (/usr/bin/python3) runs mtaplugin from a virtual environment of its own,
# /usr/lib/mtaplugin/venv: the dependencies are pinned by what pip resolves at build time,
# not by what Debian ships (SQLAlchemy 2.1, falcon 4, ... are newer than Debian 12's).
# The venv is built in a staging tree and its paths rewritten to the installed ones; the
# byte code is compiled here, with the installed paths, so dpkg owns (and removes) it.
# Only dpkg-deb is used (no debhelper): the tree is small and written by hand.
set -eu
umask 022

top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/packaging/deb
out=${1:-$top/dist}
PY=/usr/bin/python3
PIP=${PIP:-$top/.venv/bin/pip}
venv=/usr/lib/mtaplugin/venv

[ -x "$PY" ] || { echo "build.sh: Debian's python3 is missing (apt-get install python3)" >&2; exit 1; }
[ -x "$PIP" ] || { echo "build.sh: no pip at $PIP (make venv)" >&2; exit 1; }

work=$(mktemp -d /tmp/mtaplugin-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root

# --- the Python environment ----------------------------------------------------------------
"$PY" -m venv --without-pip "$root$venv"
"$PIP" --python "$root$venv/bin/python" install -q --no-compile --no-warn-script-location \
    --disable-pip-version-check "$top" >"$work/pip.log" 2>&1 || { cat "$work/pip.log" >&2; exit 1; }
rm -f "$root$venv"/bin/activate*  "$root$venv"/bin/Activate.ps1
# the staging path, wherever pip or venv wrote it (script shebangs, pyvenv.cfg)
grep -rlI --null -F "$root" "$root$venv" | xargs -0 -r sed -i "s|$root||g"
find "$root$venv" -name __pycache__ -prune -exec rm -rf {} +
"$PY" -m compileall -q -j0 -s "$root" -p / "$root$venv/lib" >/dev/null

# --- the files ------------------------------------------------------------------------------
install -D -m 0755 "$here/mtaplugin.sh" "$root/usr/bin/mtaplugin"
install -D -m 0755 "$here/prepare" "$root/usr/lib/mtaplugin/prepare"
install -D -m 0640 "$here/mtaplugin.toml" "$root/etc/mtaplugin/mtaplugin.toml"
install -D -m 0644 "$here/mtaplugin.service" "$root/lib/systemd/system/mtaplugin.service"
install -D -m 0644 "$here/mtaplugin@.service" "$root/lib/systemd/system/mtaplugin@.service"
doc=$root/usr/share/doc/mtaplugin
install -D -m 0644 "$here/README.Debian" "$doc/README.Debian"
install -D -m 0644 "$here/copyright" "$doc/copyright"
install -D -m 0644 "$top/docs/package.md" "$doc/package.md" 2>/dev/null || true
install -d "$doc/examples"
cp -p "$top"/contrib/postfix/* "$doc/examples/"
for mta in exim sendmail; do
    [ -d "$top/contrib/$mta" ] && cp -rp "$top/contrib/$mta" "$doc/examples/$mta"
done
chmod -R u+rwX,go+rX,go-w "$root"
# the settings may hold a database or LDAP password: root and (postinst) the group mtaplugin
chmod 0640 "$root/etc/mtaplugin/mtaplugin.toml"

# --- control ----------------------------------------------------------------------------------
version=$("$PY" -c 'import tomllib; print(tomllib.load(open("'"$top"'/pyproject.toml", "rb"))["project"]["version"])')
if git -C "$top" rev-parse HEAD >/dev/null 2>&1; then
    version=$version+git$(git -C "$top" rev-list --count HEAD).$(git -C "$top" rev-parse --short HEAD)
fi
arch=$(dpkg --print-architecture)
pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
pynext=$("$PY" -c 'import sys; print("%d.%d" % (sys.version_info[0], sys.version_info[1] + 1))')
# the venv's site-packages is python$pyver's; the shared libraries its extensions need,
# from the system (libmilter, ...), by the packages that hold them
libs=$(find "$root$venv" -name '*.so*' -type f -exec ldd {} + 2>/dev/null \
    | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | grep -v "^$root" | sort -u)
pkgs=""
for lib in $libs; do
    real=$(readlink -f "$lib")
    for cand in "$lib" "$real" "/usr$lib" "${lib#/usr}" "/usr$real" "${real#/usr}"; do
        p=$(dpkg -S "$cand" 2>/dev/null | head -1 | cut -d: -f1) && [ -n "$p" ] && break
    done
    [ -n "${p:-}" ] && pkgs="$pkgs $p"
done
depends="python3 (>= $pyver), python3 (<< $pynext), passwd, util-linux"
for p in $(echo "$pkgs" | tr ' ' '\n' | sort -u); do depends="$depends, $p"; done

install -d -m 0755 "$root/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@SIZE@|$size|" \
    -e "s|@DEPENDS@|$depends|" "$here/control.in" >"$root/DEBIAN/control"
install -m 0644 "$here/conffiles" "$root/DEBIAN/conffiles"
for script in postinst prerm postrm; do
    install -m 0755 "$here/$script" "$root/DEBIAN/$script"
done

mkdir -p "$out"
deb=$out/mtaplugin_${version}_${arch}.deb
# zstd: a tenth of xz's time for a slightly larger file; dpkg reads it since Debian 12
dpkg-deb --root-owner-group -Z"${DEB_COMPRESSION:-zstd}" --build "$root" "$deb" >/dev/null
ln -sf "$(basename "$deb")" "$out/mtaplugin.deb"
echo "$deb"
