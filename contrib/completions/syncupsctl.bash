# bash completion for syncupsctl and syncupsd                  -*- shell-script -*-
#
# Install: copy to /usr/share/bash-completion/completions/syncupsctl (system-wide, with a
# symbolic link or copy named syncupsd beside it), or to
# ~/.local/share/bash-completion/completions/syncupsctl, or source it from ~/.bashrc.
#
# Sync-up titles (escaped) and ids, and meeting ids, are asked from the running daemon (`syncupsctl ids`,
# `syncupsctl ids ID`); when it does not answer, nothing is offered. Needs bash 4.

_syncupsctl_commands=(status ping devices voices themes list ids show add edit rm meeting rm-meeting stats export start next
    pause resume toggle absent back end session schedule call watch help)
_syncupsctl_themes=(bubblegum buttercup indigo lavender magenta navy orange oxblood periwinkle poppy purple
    seafoam sky tan teal yellow)
_syncupsctl_requests=(ping status themes.list syncups.list syncups.get syncups.create syncups.update
    syncups.delete meetings.get meetings.delete session.start session.get session.next session.pause
    session.resume session.absent session.back session.end schedule.list schedule.set schedule.clear devices voices
    voices.forget subscribe unsubscribe)

# Options that take a value, global or of a command.
_syncupsctl_value_options=' --socket --timeout --duration --theme --attendee --title --add-attendee --remove-attendee --rename-attendee --absent --format --output --text --idle-text --offline-text --topic --last --tz --reminder '

# Runs the syncupsctl being completed, with the command line's --socket, quietly.
_syncupsctl_run() {
    local program=${_syncupsctl_program:-syncupsctl}
    # shellcheck disable=SC2088 # a literal ~/ typed on the command line
    [[ $program == "~/"* ]] && program=$HOME/${program#"~/"}
    "$program" "${_syncupsctl_globals[@]}" --timeout 2 "$@" 2>/dev/null
}

# A --socket value as typed: without surrounding quotes, with a leading ~/ expanded.
_syncupsctl_dequote() {
    local value=$1
    if [[ $value == \"*\" || $value == \'*\' ]]; then
        value=${value:1:${#value}-2}
    else
        # shellcheck disable=SC2162 # read without -r drops the backslashes of sp\ ace
        IFS= read value <<<"$value"
    fi
    # shellcheck disable=SC2088 # a literal ~/ typed on the command line
    [[ $value == "~/"* ]] && value=$HOME/${value#"~/"}
    printf '%s' "$value"
}

# COMPREPLY = the sync-ups $1 may name: their titles, escaped as the shell reads them back and
# matched ignoring case (fish and zsh show the titles beside the ids; bash cannot show both), and
# the ids a typed prefix starts (in any case). A blank title, or one several sync-ups share, is
# offered as the ids.
_syncupsctl_syncups() {
    local cur=$1 id title escaped i
    local -a ids=() titles=()
    local -A count=()
    while IFS=$'\t' read -r id title; do
        ids+=("$id")
        titles+=("$title")
        [[ -n $title ]] && count[$title]=$((${count[$title]:-0} + 1))
    done < <(_syncupsctl_run ids)
    COMPREPLY=()
    for i in "${!ids[@]}"; do
        title=${titles[i]}
        if [[ -z $title || ${count[$title]} -gt 1 || -n $cur && ${ids[i]} == "${cur^^}"* ]]; then
            [[ ${ids[i]} == "${cur^^}"* ]] && COMPREPLY+=("${ids[i]}")
        fi
        [[ -z $title || ${count[$title]} -gt 1 ]] && continue
        printf -v escaped '%q' "$title"
        [[ ${escaped,,} == "${cur,,}"* ]] && COMPREPLY+=("$escaped")
    done
}

# The ids of the meetings of sync-up $1, one a line.
_syncupsctl_meeting_ids() {
    [[ -n $1 ]] || return 0
    _syncupsctl_run ids "$1" | cut -f1
}

# COMPREPLY = the candidates that start with $1 (upper-cased when $2 is "upper"), as readline
# wants them: it completes only the text after the last : or = of COMP_WORDBREAKS.
_syncupsctl_reply() {
    local cur=$1 mode=$2 candidate prefix=''
    shift 2
    local match=$cur
    [[ $mode == upper ]] && match=${cur^^}
    COMPREPLY=()
    for candidate in "$@"; do
        [[ $candidate == "$match"* ]] && COMPREPLY+=("$candidate")
    done
    local breaks=''
    [[ $COMP_WORDBREAKS == *:* ]] && breaks+=':'
    [[ $COMP_WORDBREAKS == *=* ]] && breaks+='='
    if [[ -n $breaks && $cur == *["$breaks"]* ]]; then
        prefix=${cur%"${cur##*["$breaks"]}"}
        COMPREPLY=("${COMPREPLY[@]#"$prefix"}")
    fi
}

_syncupsctl_files() {
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen -f -- "$1")
}

# Sets the array words to COMP_WORDS up to the cursor, with the pieces that COMP_WORDBREAKS
# split at : and = joined again ("--format=way", "hw:CARD=PCH"), and cword to its last index.
_syncupsctl_words() {
    local rest=${COMP_LINE:0:COMP_POINT} i word trimmed
    words=()
    cword=-1
    for ((i = 0; i <= COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        trimmed=${rest#"${rest%%[![:space:]]*}"}
        if ((cword >= 0)) && [[ ${#trimmed} -eq ${#rest} ]]; then
            words[cword]+=$word
        else
            words+=("$word")
            cword=$((cword + 1))
        fi
        rest=${trimmed#"$word"}
    done
}

_syncupsctl() {
    local words cword
    _syncupsctl_words
    local cur=${words[cword]}
    local _syncupsctl_program=${words[0]}
    local _syncupsctl_globals=()

    # What is already on the line: the command, its arguments, and a --socket to pass on.
    local i word command='' expect=''
    local positionals=()
    for ((i = 1; i < cword; i++)); do
        word=${words[i]}
        if [[ -n $expect ]]; then
            [[ $expect == --socket ]] && _syncupsctl_globals=(--socket "$(_syncupsctl_dequote "$word")")
            expect=''
            continue
        fi
        case $word in
            --socket=*) _syncupsctl_globals=(--socket "$(_syncupsctl_dequote "${word#--socket=}")") ;;
            --*=*) ;;
            -*) [[ $_syncupsctl_value_options == *" $word "* ]] && expect=$word ;;
            *)
                if [[ -z $command ]]; then command=$word; else positionals+=("$word"); fi
                ;;
        esac
    done

    # The value of an option: --opt VALUE or --opt=VALUE.
    local option='' value=$cur
    if [[ -n $expect ]]; then
        option=$expect
    elif [[ $cur == --*=* ]]; then
        option=${cur%%=*}
        value=${cur#*=}
    fi
    if [[ -n $option ]]; then
        case $option in
            --socket | --output) _syncupsctl_files "$value" ;;
            --theme) _syncupsctl_reply "$value" exact "${_syncupsctl_themes[@]}" ;;
            --remove-attendee | --rename-attendee)
                # The sync-up's attendees by name, escaped (a rename's =NEW is the user's to type).
                local name escaped names=()
                while IFS=$'\t' read -r _ name; do
                    [[ -n $name ]] || continue
                    printf -v escaped '%q' "$name"
                    names+=("$escaped")
                done < <(_syncupsctl_run ids "$(_syncupsctl_dequote "${positionals[0]:-}")" --attendees)
                _syncupsctl_reply "$value" exact "${names[@]}"
                ;;
            --format)
                case $command in
                    export) _syncupsctl_reply "$value" exact md json srt vtt ;;
                    *) _syncupsctl_reply "$value" exact events json waybar polybar i3blocks tmux ;;
                esac
                ;;
            --topic) _syncupsctl_reply "$value" exact syncups session daemon ;;
            *) COMPREPLY=() ;;
        esac
        return 0
    fi

    if [[ $cur == -* ]]; then
        local options=(--json --help)
        case $command in
            '') options=(--socket --json --timeout --version --help) ;;
            add | create) options+=(--duration --theme --attendee) ;;
            edit) options+=(--title --duration --theme --attendee --add-attendee --remove-attendee --rename-attendee) ;;
            export) options=(--format --output --help) ;;
            start) options+=(--absent --no-audio --no-transcribe --no-call) ;;
            end) options+=(--save --discard --no-wait) ;;
            rm | delete | rm-meeting) options+=(--yes) ;;
            stats) options+=(--last) ;;
            schedule) options+=(--tz --reminder --auto-start --no-auto-start --clear) ;;
            ids) options+=(--attendees) ;;
            watch) options=(--format --topic --once --text --idle-text --offline-text --clicks --no-clicks --help) ;;
        esac
        _syncupsctl_reply "$cur" exact "${options[@]}"
        return 0
    fi

    if [[ -z $command ]]; then
        _syncupsctl_reply "$cur" exact "${_syncupsctl_commands[@]}"
        return 0
    fi

    local ids=()
    case $command:${#positionals[@]} in
        ids:0 | show:0 | edit:0 | rm:0 | delete:0 | start:0 | meeting:0 | rm-meeting:0 | stats:0 | export:0 | schedule:0)
            _syncupsctl_syncups "$cur"
            ;;
        meeting:1 | rm-meeting:1 | export:1)
            # The sync-up as typed, maybe an escaped title (Daily\ stand-up).
            mapfile -t ids < <(_syncupsctl_meeting_ids "$(_syncupsctl_dequote "${positionals[0]}")")
            _syncupsctl_reply "$cur" upper "${ids[@]}"
            # The newest meeting by name, as git names HEAD (latest~N for older ones).
            [[ -n ${ids[0]:-} && latest == "$cur"* ]] && COMPREPLY+=(latest)
            ;;
        help:0) _syncupsctl_reply "$cur" exact "${_syncupsctl_commands[@]}" ;;
        call:0) _syncupsctl_reply "$cur" exact "${_syncupsctl_requests[@]}" ;;
        *) COMPREPLY=() ;;
    esac
    return 0
}

# "default" and the ALSA devices `arecord -L` or `aplay -L` ($1) lists: the lines that do not
# start with a space.
_syncupsd_alsa_devices() {
    {
        echo default
        command -v "$1" >/dev/null 2>&1 && "$1" -L 2>/dev/null | grep -v '^[[:space:]]'
    } | awk '!seen[$0]++'
}

_syncupsd() {
    local words cword
    _syncupsctl_words
    local cur=${words[cword]} option='' value
    ((cword > 0)) && option=${words[cword - 1]}
    value=$cur
    if [[ $cur == --*=* ]]; then
        option=${cur%%=*}
        value=${cur#*=}
    elif [[ $cur == -* ]]; then
        _syncupsctl_reply "$cur" exact --socket --data-dir --audio-device --call-audio --cue-device --cue --no-cue \
            --speech-engine --speech-command --speech-model --speech-dictionary --speech-language-model \
            --speech-grammar --voice-model --max-connections --busy-poll --log-level --config --no-config --help --version
        return 0
    fi
    local devices=()
    case $option in
        --socket | --speech-dictionary | --speech-language-model | --speech-grammar | --voice-model | --config)
            _syncupsctl_files "$value"
            ;;
        --data-dir | --speech-model)
            compopt -o filenames 2>/dev/null
            mapfile -t COMPREPLY < <(compgen -d -- "$value")
            ;;
        --audio-device | --cue-device)
            if [[ $option == --audio-device ]]; then
                mapfile -t devices < <(_syncupsd_alsa_devices arecord)
            else
                mapfile -t devices < <(_syncupsd_alsa_devices aplay)
            fi
            _syncupsctl_reply "$value" exact "${devices[@]}"
            ;;
        --speech-engine) _syncupsctl_reply "$value" exact auto pocketsphinx command none ;;
        --call-audio) _syncupsctl_reply "$value" exact auto off ;;
        --speech-command) mapfile -t COMPREPLY < <(compgen -c -- "$value") ;;
        --log-level) _syncupsctl_reply "$value" exact debug info notice warning error ;;
        *) COMPREPLY=() ;;
    esac
    return 0
}

complete -F _syncupsctl syncupsctl
complete -F _syncupsd syncupsd
