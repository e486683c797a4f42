#!/usr/bin/env bash
# Writes ecp's release archive for one target from a built binary:
#
#   scripts/dist.sh TARGET BINARY OUT_DIR
#
# OUT_DIR/ecp-vVERSION-TARGET.tar.gz holds ecp-vVERSION-TARGET/ecp (.exe on
# Windows) and README.md. The same binary gives the same bytes whatever the
# folder, the clock or the user: GNU tar with sorted names, numeric owner
# 0, fixed modes and times (SOURCE_DATE_EPOCH, else the commit's time), and
# gzip without a name or time stamp.
set -euo pipefail

[ $# -eq 3 ] || { echo "usage: scripts/dist.sh TARGET BINARY OUT_DIR" >&2; exit 2; }
target="$1"
[[ "$target" =~ ^[a-z0-9_]+-[a-z0-9_]+-[a-z0-9_]+(-[a-z0-9_]+)?$ ]] ||
  { echo "dist: not a target triple: $target" >&2; exit 2; }
# BINARY and OUT_DIR are the caller's, resolved before moving to the root.
[ -f "$2" ] || { echo "dist: no binary at $2" >&2; exit 2; }
binary="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
mkdir -p "$3"
out="$(cd "$3" && pwd)"
cd "$(dirname "$0")/.."
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}"
name="ecp-v${version}-${target}"
exe=ecp
case "$target" in *windows*) exe=ecp.exe ;; esac

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/$name"
cp "$binary" "$stage/$name/$exe"
cp README.md "$stage/$name/README.md"
chmod 0755 "$stage/$name/$exe"
chmod 0644 "$stage/$name/README.md"
chmod 0755 "$stage/$name"

mkdir -p "$out"
tar --sort=name --format=ustar --owner=0 --group=0 --numeric-owner \
  --mtime="@$epoch" -C "$stage" -cf - "$name" | gzip -n -9 > "$out/.$name.tar.gz.part"
mv "$out/.$name.tar.gz.part" "$out/$name.tar.gz"
echo "$out/$name.tar.gz"
