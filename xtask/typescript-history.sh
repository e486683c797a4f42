#!/usr/bin/env bash
# Writes src/upgrade/typescript-history.txt, what `ecp upgrade` knows as
# written by ecp in a TypeScript (local-ts) extension: the SHA-256 of every
# version of every file the template ever copied or rendered, by the path it
# has in an extension, with the runtime version of the commit that first
# had it. Walks git history from the commit that added the template, then
# the working tree. Run it (`cargo xtask ts-history`) after changing
# runtimes/typescript, the contract files or templates/local-ts/src/main.ts.tera;
# a test fails while the table misses the current files.
set -euo pipefail
cd "$(dirname "$0")/.."
first=10876d9 # ecp new --template local-ts
sources=(runtimes/typescript/src runtimes/typescript/test runtimes/typescript/tsconfig.json
  runtimes/typescript/package.json crates/ecp-runtime/contracts/v1 templates/local-ts/src/main.ts.tera)

extension_path() {
  case $1 in
    runtimes/typescript/*) echo "${1#runtimes/typescript/}" ;;
    crates/ecp-runtime/contracts/v1/*) echo "contracts/v1/${1#crates/ecp-runtime/contracts/v1/}" ;;
    templates/local-ts/src/main.ts.tera) echo src/main.ts ;;
  esac
}

version_of() { sed -n 's/^version = "\(.*\)"/\1/p' | head -n 1; }

# package.json's scripts, one "sum package.json#scripts.NAME version" line
# each (the upgrade replaces a script only when it is one ecp wrote).
scripts_of() { # VERSION < package.json
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{for(const [k,v] of Object.entries(JSON.parse(s).scripts||{}))process.stdout.write(k+"\t"+Buffer.from(v).toString("base64")+"\n")})' |
    while IFS=$'\t' read -r name script; do
      echo "$(printf '%s' "$script" | base64 -d | sha256sum | cut -d' ' -f1) package.json#scripts.$name $1"
    done
}

{
  for commit in $(git rev-list --reverse "$first^..HEAD" -- "${sources[@]}"); do
    version=$(git show "$commit:crates/ecp-runtime/Cargo.toml" | version_of)
    git ls-tree -r --name-only "$commit" -- "${sources[@]}" | grep -v 'package.json$' | while read -r path; do
      sum=$(git show "$commit:$path" | sha256sum | cut -d' ' -f1)
      echo "$sum $(extension_path "$path") $version"
    done
    git show "$commit:runtimes/typescript/package.json" | scripts_of "$version"
  done
  version=$(version_of < crates/ecp-runtime/Cargo.toml)
  scripts_of "$version" < runtimes/typescript/package.json
  git ls-files -- "${sources[@]}" | grep -v 'package.json$' | while read -r path; do
    sum=$(sha256sum < "$path" | cut -d' ' -f1)
    echo "$sum $(extension_path "$path") $version"
  done
} | awk '!seen[$1 " " $2]++' | {
  echo "# sha256 path-in-extension runtime-version (first seen); written by cargo xtask ts-history"
  sort -k2,2 -k3,3V
} > src/upgrade/typescript-history.txt
