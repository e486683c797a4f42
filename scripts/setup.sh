#!/usr/bin/env bash
# Puts in place what the tests need beyond Rust and Node.js, and nothing
# when it is all there (a second run takes about a second). README's test
# command runs it before `cargo test --workspace`, and so does .ci/run:
# one list, so the two cannot drift.
#
# - Debian packages, by the command each provides: installed with apt-get
#   (as root, or through sudo). Without root, sudo and apt-get it stops at
#   once, before any test runs, naming the packages and the command that
#   installs them.
# - The PyPI tools of tests/ci-tools.txt, in the venv target/ci-tools.
# - json-server from npm, in target/npm-cache (tests/support/services.rs).
#
# Says on stderr what it installs and why. ECP_SETUP_DRY_RUN=1 only says
# what is missing and how it would be installed (its test runs it so).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "setup: $*" >&2; }

# command package why
needs=(
  "node nodejs the tests compare with the ECMAScript engine and build TypeScript extensions"
  "npm npm the tests install pinned npm packages (json-server, the TypeScript template's)"
  "unzip unzip the packaging tests extract zip archives with another tool"
  "script util-linux the terminal tests run ecp under a pseudo-terminal"
  "unshare util-linux the release tests run Qwen's installer in a namespace of its own"
  "tinyproxy tinyproxy the proxy tests go through a real forward proxy"
  "python3 python3 the check tests run an independent profile server in Python"
  "openssl openssl the TLS tests make a test certificate authority"
  "ip iproute2 the release tests make a network namespace"
  "git git the provenance tests commit and clone"
  "curl curl the deployment tests talk to nginx and caddy"
  "ssh-keygen openssh-client the provenance tests sign with an OpenSSH key"
  "shellcheck shellcheck the managed-deployment test checks the POSIX launcher"
  "nginx nginx-light the remote template's proxy configuration runs in nginx"
  "caddy caddy the remote template's proxy configuration is checked by caddy"
  "/usr/bin/time time the hook check's test measures ecp's peak memory (GNU time; the shell's keyword is not it)"
)

missing_packages=()
for need in "${needs[@]}"; do
  read -r command package why <<<"$need"
  if ! command -v "$command" >/dev/null 2>&1; then
    say "$command not found: Debian's $package is needed ($why)"
    case " ${missing_packages[*]} " in
      *" $package "*) ;;
      *) missing_packages+=("$package") ;;
    esac
  fi
done
# A venv needs Debian's python3-venv (ensurepip) where python3 is Debian's.
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
  say "python3 cannot make a venv: Debian's python3-venv is needed (the PyPI tools of tests/ci-tools.txt go into one)"
  missing_packages+=(python3-venv)
fi

if [ "${#missing_packages[@]}" -gt 0 ]; then
  install="apt-get install -y ${missing_packages[*]}"
  if [ "$(id -u)" = 0 ]; then
    runner=()
  elif command -v sudo >/dev/null 2>&1 && { sudo -n true 2>/dev/null || [ -t 0 ]; }; then
    runner=(sudo)
  else
    say "cannot install ${missing_packages[*]}: this is not root and sudo is not available without a password"
    echo "error: the tests need Debian's ${missing_packages[*]}" >&2
    echo "  = help: install them, then run the tests again: sudo apt-get update && sudo $install" >&2
    exit 1
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: the tests need ${missing_packages[*]} (Debian's package names), and there is no apt-get here" >&2
    echo "  = help: install them with this system's package manager, then run the tests again" >&2
    exit 1
  fi
  if [ -n "${ECP_SETUP_DRY_RUN:-}" ]; then
    say "would run: ${runner[*]:-} apt-get update && ${runner[*]:-} $install"
    exit 0
  fi
  say "installing ${missing_packages[*]} with apt-get"
  "${runner[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${runner[@]}" apt-get install -y -qq "${missing_packages[@]}" >/dev/null
fi
[ -n "${ECP_SETUP_DRY_RUN:-}" ] && exit 0

# The PyPI tools (the tests install them on first use too; the copy of the
# list written last marks a finished install).
if ! cmp -s tests/ci-tools.txt target/ci-tools/.ecp-installed; then
  say "installing the PyPI tools of tests/ci-tools.txt into target/ci-tools"
  rm -rf target/ci-tools
  python3 -m venv target/ci-tools
  target/ci-tools/bin/pip install -q -r tests/ci-tools.txt
  cp tests/ci-tools.txt target/ci-tools/.ecp-installed
fi

# json-server, where tests/support/services.rs looks for it; a half-finished
# install is never kept.
json_server=target/npm-cache/json-server@0.17.4
if [ ! -f "$json_server/node_modules/json-server/package.json" ]; then
  say "installing json-server 0.17.4 into $json_server (a real search service the any-API tests map)"
  rm -rf "$json_server.partial"
  mkdir -p "$json_server.partial"
  npm install --no-save --no-audit --no-fund --loglevel=error --prefer-offline \
    --cache "$PWD/target/npm-cache/_npm" --prefix "$json_server.partial" json-server@0.17.4 >&2
  rm -rf "$json_server"
  mv "$json_server.partial" "$json_server"
fi
