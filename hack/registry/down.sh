#!/usr/bin/env bash
# Stops the registry hack/registry/up.sh DIR started and removes DIR. Bounded: TERM, up to
# 5 s, then KILL.
set -uo pipefail
dir="${1:?usage: down.sh DIR}"
if [ -f "$dir/pid" ]; then
  pid="$(cat "$dir/pid")"
  kill "$pid" 2>/dev/null
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null
fi
rm -rf "$dir"
