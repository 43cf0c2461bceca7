#!/usr/bin/env bash
# Checks the bash completion in syncupsctl.bash against a running daemon.
#
#     SYNCUPSD_SOCKET=/path/to/socket contrib/completions/test-completions.sh
#
# It starts nothing: run syncupsd first, with at least one sync-up and one recorded meeting for
# the id checks. syncupsctl must be on PATH, or set SYNCUPSCTL to its path. The commands and
# options offered are also checked against `syncupsctl help` and `syncupsctl help COMMAND`.
# Exits 0 when every check passes, 1 when one fails, 2 when the daemon is out of reach.

set -u

here=$(cd "$(dirname "$0")" && pwd)
program=${SYNCUPSCTL:-syncupsctl}

if [[ -z ${SYNCUPSD_SOCKET:-} ]]; then
    echo "test-completions: set SYNCUPSD_SOCKET to the socket of a running syncupsd" >&2
    exit 2
fi
if ! "$program" ping >/dev/null 2>&1; then
    echo "test-completions: $program cannot reach syncupsd at $SYNCUPSD_SOCKET" >&2
    exit 2
fi

# shellcheck source-path=SCRIPTDIR source=syncupsctl.bash
source "$here/syncupsctl.bash" || exit 1

failures=0

# complete LINE: sets COMP_* as bash does for LINE with the cursor at its end (words split at
# blanks and at the : and = of COMP_WORDBREAKS), runs the function registered for its first word,
# and leaves the result in COMPREPLY. The first word is replaced by $program.
complete_line() {
    local line=$1 word piece
    COMP_LINE=$line
    COMP_POINT=${#line}
    COMP_WORDBREAKS=$' \t\n"\'><=;|&(:'
    COMP_WORDS=()
    for word in $line; do
        while [[ $word == *[=:]* ]]; do
            piece=${word%%[=:]*}
            [[ -n $piece ]] && COMP_WORDS+=("$piece")
            word=${word:${#piece}}
            COMP_WORDS+=("${word:0:1}")
            word=${word:1}
        done
        [[ -n $word ]] && COMP_WORDS+=("$word")
    done
    [[ $line == *' ' ]] && COMP_WORDS+=('')
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    local name=${COMP_WORDS[0]}
    COMP_WORDS[0]=$program
    COMP_LINE=$program${COMP_LINE#"$name"}
    COMP_POINT=${#COMP_LINE}
    local function
    function=$(complete -p "$name" | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
    COMPREPLY=()
    "$function" "$program" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
}

# expect LINE WORD...: the completions of LINE are exactly WORD... (in any order).
expect() {
    local line=$1
    shift
    complete_line "$line"
    local got want
    got=$(printf '%s\n' "${COMPREPLY[@]}" | sort)
    want=$(printf '%s\n' "$@" | sort)
    if [[ $got == "$want" ]]; then
        echo "ok: '$line'"
    else
        echo "FAIL: '$line'"
        echo "  expected: $(tr '\n' ' ' <<<"$want")"
        echo "  got:      $(tr '\n' ' ' <<<"$got")"
        failures=$((failures + 1))
    fi
}

expect 'syncupsctl sh' show
expect 'syncupsctl add x --theme o' orange oxblood
expect 'syncupsctl add x --theme=o' orange oxblood
expect 'syncupsctl --json st' status stats start
expect 'syncupsctl watch --format=wa' waybar
expect 'syncupsctl export AAAA BBBB --format ' md json srt vtt
expect 'syncupsctl end --' --json --help --save --discard --no-wait
expect 'syncupsctl help rm' rm rm-meeting
expect 'syncupsctl tog' toggle
expect 'syncupsctl help to' toggle
expect 'syncupsctl toggle --' --json --help
expect 'syncupsctl watch --o' --once --offline-text
expect 'syncupsctl watch --no' --no-clicks
expect 'syncupsctl watch --offline-text --'
expect 'syncupsctl watch --offline-text off --f' --format
expect 'syncupsctl watch --offline-text=off --format=t' tmux
expect 'syncupsd --log-level ' debug info notice warning error
expect 'syncupsd --speech-engine=p' pocketsphinx

# The commands are those `syncupsctl help` lists, and help. Each command's options are those its
# `syncupsctl help COMMAND` names, and --json and --help.
mapfile -t commands < <("$program" help | awk '/^  [a-z]/ { print $1 }')
if ((${#commands[@]} == 0)); then
    echo "FAIL: \`$program help\` lists no commands"
    failures=$((failures + 1))
else
    expect 'syncupsctl ' "${commands[@]}" help
fi
for command in "${commands[@]}"; do
    mapfile -t options < <("$program" help "$command" | grep -o -- '--[a-z][a-z-]*' | sort -u)
    complete_line "syncupsctl $command --"
    got=$(printf '%s\n' "${COMPREPLY[@]}" | grep -vx -- '--json' | grep -vx -- '--help' | sort)
    want=$(printf '%s\n' "${options[@]}" | grep -v '^$' | sort)
    if [[ $got == "$want" ]]; then
        echo "ok: 'syncupsctl $command --' gives the options of \`syncupsctl help $command\`"
    else
        echo "FAIL: 'syncupsctl $command --'"
        echo "  syncupsctl help $command: $(tr '\n' ' ' <<<"$want")"
        echo "  completed (less --json --help): $(tr '\n' ' ' <<<"$got")"
        failures=$((failures + 1))
    fi
done

# The sync-ups: by default their titles, escaped as the shell reads them back (as `syncupsctl ids`
# lists them); the ids when the word starts like one.
mapfile -t ids < <("$program" ids | cut -f1)
mapfile -t titles < <("$program" ids | cut -f2)
if ((${#ids[@]} == 0)); then
    echo "FAIL: the daemon has no sync-ups; create one to check the id completion"
    failures=$((failures + 1))
else
    escaped=()
    for title in "${titles[@]}"; do
        printf -v title '%q' "$title"
        escaped+=("$title")
    done
    expect 'syncupsctl show ' "${escaped[@]}"
    for id in "${ids[@]}"; do
        [[ $id =~ ^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$ ]] || {
            echo "FAIL: \`syncupsctl ids\` gave $id"
            failures=$((failures + 1))
        }
    done
    expect "syncupsctl show ${escaped[0]:0:3}" "${escaped[0]}"

    # A lower-case prefix completes to the upper-case id.
    first=${ids[0]}
    lower=$(printf '%s' "${first:0:4}" | tr 'A-F' 'a-f')
    complete_line "syncupsctl start $lower"
    if printf '%s\n' "${COMPREPLY[@]}" | grep -qx "$first"; then
        echo "ok: 'syncupsctl start $lower' offers $first"
    else
        echo "FAIL: 'syncupsctl start $lower' did not offer $first (got: ${COMPREPLY[*]})"
        failures=$((failures + 1))
    fi

    # ids takes a sync-up too.
    expect 'syncupsctl ids ' "${escaped[@]}"
    expect "syncupsctl ids $(printf '%s' "${first:0:8}" | tr 'A-F' 'a-f')" "$first"

    # The meetings of a sync-up that has some, as `syncupsctl ids ID` lists them, after a
    # lower-case prefix of the sync-up's id.
    meetings=()
    for id in "${ids[@]}"; do
        mapfile -t meetings < <("$program" ids "$id" | cut -f1)
        ((${#meetings[@]} > 0)) && break
    done
    if ((${#meetings[@]} == 0)); then
        echo "FAIL: no sync-up has a meeting; record one to check the meeting id completion"
        failures=$((failures + 1))
    else
        expect "syncupsctl meeting $(printf '%s' "${id:0:8}" | tr 'A-F' 'a-f') " "${meetings[@]}" latest
        # After a title, escaped as completed.
        for i in "${!ids[@]}"; do [[ ${ids[i]} == "$id" ]] && title=${escaped[i]}; done
        expect "syncupsctl export $title " "${meetings[@]}" latest
        expect "syncupsctl rm-meeting ${id:0:8} la" latest
        # The sync-up's attendees, by name, for the edits that name one.
        mapfile -t attendees < <("$program" ids "$id" --attendees | cut -f2)
        expect "syncupsctl edit ${id:0:8} --remove-attendee " "${attendees[@]}"
        expect "syncupsctl edit $title --rename-attendee=" "${attendees[@]}"
        expect "syncupsctl export ${id:0:8} ${meetings[0]:0:8}" "${meetings[0]}"
    fi
fi

# With the daemon out of reach, nothing is offered and nothing is printed.
errors=$(SYNCUPSD_SOCKET=/nonexistent/syncupsd.socket complete_line 'syncupsctl show ' 2>&1; echo "${#COMPREPLY[@]}")
if [[ $errors == 0 ]]; then
    echo "ok: no daemon, no ids and no messages"
else
    echo "FAIL: with no daemon: $errors"
    failures=$((failures + 1))
fi

if ((failures > 0)); then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all checks passed"
