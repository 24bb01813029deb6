#!/usr/bin/env bash
# Fails when a tracked text file reads like a work log: numbered sessions or sittings of work, issue numbers, work
# dates or the build machines' absolute paths. Git keeps the history; the tree describes the project as it is.
# Prints file:line for every hit.
#   tests/check_no_worklog.sh [SOURCE_DIR=.]
set -euo pipefail
SRC=${1:-.}
cd "$SRC"
PATTERNS=(
    '[Ss]essions? [0-9]'                    # "session 12", "sessions 30 and 31"
    '[Ss]ittings?\b'                        # the training's "sittings"
    '[Ii]ssues? #?[0-9]'                    # "issue 16", "issue #13"
    '\(#[0-9]+\)'                           # "(#15)"
    '/work/|/root/'                         # the build machines' paths
)
args=()
for p in "${PATTERNS[@]}"; do args+=(-e "$p"); done
# Text files only (-I); data that is not prose (tokenizers, fuzz inputs, tokenizer goldens) and this script are left out.
excludes=(':!tests/check_no_worklog.sh' ':!tests/fuzz/corpus' ':!tests/fuzz/reproducers' ':!tests/data'
          ':!assets/models/*/tokenizer.json')
# A work date; the generated performance report and the changelog's releases carry dates of their own.
DATE='\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b'
dated=(':!docs/performance.md' ':!CHANGELOG.md')
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    hits=$({ git grep -nIE "${args[@]}" -- . "${excludes[@]}"; git grep -nIE "$DATE" -- . "${excludes[@]}" "${dated[@]}"; } ||
        true)
else  # a source tree without git (a release tarball): every file but build folders
    g=(grep -rnIE --exclude-dir='.git' --exclude-dir='build*' --exclude=check_no_worklog.sh --exclude=tokenizer.json
       --exclude-dir=corpus --exclude-dir=reproducers --exclude-dir=data)
    hits=$({ "${g[@]}" "${args[@]}" .; "${g[@]}" --exclude=performance.md --exclude=CHANGELOG.md -e "$DATE" .; } |
        sed 's|^\./||' || true)
fi
hits=$(echo "$hits" | sed '/^$/d' | sort -t: -k1,1 -k2,2n -u)
if [ -n "$hits" ]; then
    echo "$hits"
    echo "check_no_worklog: $(echo "$hits" | wc -l) line(s) read like a work log (sessions, sittings, issue numbers," \
        "dates, machine paths); describe the project as it is now and leave the history to git" >&2
    exit 1
fi
echo "check_no_worklog: no work-log lines"
