#!/usr/bin/env bash
# Installs one ecp release for this runner: downloads its archive and the
# release's SHA256SUMS, checks the digest, unpacks, and puts `ecp` on PATH.
# Run by action.yml; also usable from any shell:
#
#   ECP_VERSION=0.1.0 scripts/install-ecp.sh
#
# Environment: ECP_VERSION (required, no leading v), ECP_REPOSITORY
# (owner/name), ECP_INSTALL_DIR (default $RUNNER_TEMP/ecp-VERSION),
# GITHUB_SERVER_URL (default https://github.com), RUNNER_OS/RUNNER_ARCH
# (default: this machine), GITHUB_PATH (when set, the bin folder is added).
set -euo pipefail

fail() { echo "::error::install-ecp: $*" >&2; exit 1; }

version="${ECP_VERSION:?set ECP_VERSION, e.g. 0.1.0}"
case "$version" in
  v*) fail "ECP_VERSION is a version without the leading v: ${version#v}" ;;
esac
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$ ]] ||
  fail "ECP_VERSION is not a version: $version"
repository="${ECP_REPOSITORY:-ecp-toolchain/ecp}"
[[ "$repository" =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]] ||
  fail "ECP_REPOSITORY is not owner/name: $repository"
server="${GITHUB_SERVER_URL:-https://github.com}"

os="${RUNNER_OS:-$(uname -s)}"
arch="${RUNNER_ARCH:-$(uname -m)}"
case "$os/$arch" in
  Linux/X64 | Linux/x86_64) target=x86_64-unknown-linux-gnu ;;
  Linux/ARM64 | Linux/aarch64) target=aarch64-unknown-linux-gnu ;;
  macOS/X64 | Darwin/x86_64) target=x86_64-apple-darwin ;;
  macOS/ARM64 | Darwin/arm64) target=aarch64-apple-darwin ;;
  Windows/X64 | MINGW*/x86_64 | MSYS*/x86_64) target=x86_64-pc-windows-msvc ;;
  *) fail "ecp has no build for $os $arch" ;;
esac

name="ecp-v${version}-${target}"
archive="${name}.tar.gz"
base="${server}/${repository}/releases/download/v${version}"
dir="${ECP_INSTALL_DIR:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/ecp-${version}}"
mkdir -p "$dir"
cd "$dir"

download() {  # download URL FILE
  curl --fail --silent --show-error --location --proto '=https' --tlsv1.2 \
    --retry 3 --max-filesize 104857600 --output "$2" "$1" ||
    fail "cannot download $1"
}
download "$base/SHA256SUMS" SHA256SUMS
download "$base/$archive" "$archive"

expected="$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1 }' SHA256SUMS)"
[ -n "$expected" ] || fail "SHA256SUMS of v$version does not list $archive"
if command -v sha256sum >/dev/null 2>&1; then
  actual="$(sha256sum "$archive" | awk '{ print $1 }')"
else
  actual="$(shasum -a 256 "$archive" | awk '{ print $1 }')"
fi
[ "$actual" = "$expected" ] ||
  fail "$archive has sha256 $actual, but the release's SHA256SUMS says $expected"

rm -rf "$name"
tar -xzf "$archive"
exe=ecp
case "$target" in *windows*) exe=ecp.exe ;; esac
[ -f "$name/$exe" ] || fail "$archive holds no $name/$exe"
chmod 0755 "$name/$exe"
"$dir/$name/$exe" --version
if [ -n "${GITHUB_PATH:-}" ]; then
  echo "$dir/$name" >> "$GITHUB_PATH"
fi
echo "ecp $version installed in $dir/$name"
