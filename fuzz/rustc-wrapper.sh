#!/usr/bin/env bash
# The RUSTC_WRAPPER of the fuzz build (hack/fuzz.sh sets it). `cargo afl build` compiles every
# crate with AFL's coverage instrumentation, at opt-level 3, in one codegen unit. Only the code
# the targets run needs that: cvo, the fuzz crate and the parsers under them. The rest of the
# main crate's dependency tree (kube, k8s-openapi, tokio, hyper, rustls... for the operator),
# build scripts and proc macros are compiled plain at opt-level 1, which cuts the cold build by a
# third (BENCHMARKS.md). Cargo does not see edits to this file: after changing the crate list,
# remove the fuzz target directory (~/.cache/cvo/fuzz-target).
rustc=$1
shift
crate=
args=("$@")
for ((i = 0; i < ${#args[@]} - 1; i++)); do
  if [ "${args[i]}" = --crate-name ]; then
    crate=${args[i + 1]}
  fi
done
case $crate in
  cvo | cvo_fuzz | yaml | json | template | manifest | extract | libyaml_rs | serde_json | tar | flate2 | miniz_oxide | semver)
    exec "$rustc" "$@" ;;
esac
plain=()
for ((i = 0; i < ${#args[@]}; i++)); do
  if [ "${args[i]}" = -C ] && [ $((i + 1)) -lt ${#args[@]} ]; then
    case ${args[i + 1]} in
      passes=sancov* | llvm-args=-sanitizer-coverage* | codegen-units=* | opt-level=*)
        i=$((i + 1))
        continue ;;
    esac
  fi
  plain+=("${args[i]}")
done
exec "$rustc" "${plain[@]}" -C opt-level=1
