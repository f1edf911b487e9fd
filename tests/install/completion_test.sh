#!/usr/bin/env bash
# The generated bash completion (label install): it loads, registers for `exitscope`, and completes a
# command, an option, --by values, --reason names, --opt=value and files. Usage: completion_test.sh DIR
# (the build's docs/completion, or an installed completions folder holding `exitscope`). The zsh file
# must at least parse (zsh -n).
set -u
dir=$1
script=$dir/exitscope.bash
[ -f "$script" ] || script=$dir/exitscope
# shellcheck disable=SC1090
source "$script" || { echo "FAIL: $script does not load"; exit 1; }
complete -p exitscope >/dev/null || { echo "FAIL: no completion registered for exitscope"; exit 1; }
fails=0
# expect WORDS... -- WANTED...: completing the last word must offer every WANTED.
expect() {
  local words=() want=()
  while [ "$1" != -- ]; do words+=("$1"); shift; done
  shift
  want=("$@")
  COMP_WORDS=("${words[@]}")
  COMP_CWORD=$((${#words[@]} - 1))
  COMP_LINE="${words[*]}"
  COMPREPLY=()
  _exitscope exitscope "${words[-1]}" "${words[-2]}"
  for w in "${want[@]}"; do
    if ! printf '%s\n' "${COMPREPLY[@]}" | grep -qxF -- "$w"; then
      echo "FAIL: '${words[*]}' offers [${COMPREPLY[*]}], not $w"
      fails=$((fails + 1))
    fi
  done
}
expect exitscope rep -- report
expect exitscope "" -- report dump record top advise bench --version
expect exitscope report --b -- --by
expect exitscope report --j -- --json
expect exitscope top - -- --delay --json --reason
expect exitscope report --by v -- vm vcpu
expect exitscope report --by = vc -- vcpu
expect exitscope report --input-format "" -- auto tracedat perfdata text
expect exitscope report --reason EPT_V -- EPT_VIOLATION
expect exitscope report --reason np -- npf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
touch "$tmp/trace.dat" "$tmp/perf.data"
expect exitscope report "$tmp/tr" -- "$tmp/trace.dat"
expect exitscope report --guest-kallsyms "$tmp/pe" -- "$tmp/perf.data"
# A number takes no file names.
COMP_WORDS=(exitscope report --threads "$tmp/"); COMP_CWORD=3; COMPREPLY=()
_exitscope exitscope "$tmp/" --threads
[ ${#COMPREPLY[@]} -eq 0 ] || { echo "FAIL: --threads offers [${COMPREPLY[*]}]"; fails=$((fails + 1)); }
if [ -f "$dir/_exitscope" ]; then
  zsh -n "$dir/_exitscope" || { echo "FAIL: _exitscope does not parse in zsh"; fails=$((fails + 1)); }
fi
[ $fails -eq 0 ] && echo "ok: bash completion" || exit 1
