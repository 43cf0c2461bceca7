# fish completion for syncupsctl and syncupsd.
#
# Install: copy to ~/.config/fish/completions/syncupsctl.fish (or, system-wide, to
# /usr/share/fish/vendor_completions.d/syncupsctl.fish), and copy or link it as syncupsd.fish
# in the same directory for the syncupsd completions.
#
# Sync-up and meeting ids, with titles and dates as descriptions, are asked from the running
# daemon (`syncupsctl ids`, `syncupsctl ids ID`); when it does not answer, nothing is offered.

# The words before the cursor that are not options or option values: the command, then its
# arguments.
function __syncupsctl_words
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l skip 0
    for token in $tokens
        if test $skip = 1
            set skip 0
            continue
        end
        switch $token
            case --socket --timeout --duration --theme --attendee --title --add-attendee \
                --remove-attendee --rename-attendee --format --output --text --idle-text --offline-text --topic
                set skip 1
            case '-*'
            case '*'
                echo $token
        end
    end
end

function __syncupsctl_needs_command
    set -l words (__syncupsctl_words)
    not set -q words[1]
end

# True when the command is one of $argv[2..] and $argv[1] arguments follow it.
function __syncupsctl_at --argument-names position
    set -l words (__syncupsctl_words)
    set -q words[1]; or return 1
    contains -- $words[1] $argv[2..-1]; or return 1
    test (count $words) -eq (math $position + 1)
end

# True when the command is one of $argv.
function __syncupsctl_using
    set -l words (__syncupsctl_words)
    set -q words[1]; and contains -- $words[1] $argv
end

# Runs the syncupsctl being completed, with the command line's --socket, quietly.
function __syncupsctl_run
    set -l tokens (commandline -opc)
    set -l program (string replace -r '^~/' "$HOME/" -- $tokens[1])
    set -l socket
    for i in (seq 2 (count $tokens))
        switch $tokens[$i]
            case --socket
                set -l next (math $i + 1)
                set -q tokens[$next]; and set socket --socket (string replace -r '^~/' "$HOME/" -- $tokens[$next])
            case '--socket=*'
                set socket --socket (string replace -- --socket= '' $tokens[$i] | string replace -r '^~/' "$HOME/")
        end
    end
    $program $socket --timeout 2 $argv 2>/dev/null
end

function __syncupsctl_syncups
    __syncupsctl_run ids
end

# The names of the attendees of the sync-up given as the command's first argument.
function __syncupsctl_attendees
    set -l words (__syncupsctl_words)
    set -q words[2]; or return
    __syncupsctl_run ids $words[2] --attendees | cut -f2
end

# The meetings of the sync-up given as the command's first argument.
function __syncupsctl_meetings
    set -l words (__syncupsctl_words)
    set -q words[2]; or return
    set -l meetings (__syncupsctl_run ids $words[2])
    set -q meetings[1]; or return
    printf '%s\n' $meetings
    printf 'latest\tthe newest meeting\n'
end

complete -c syncupsctl -f

# Global options.
complete -c syncupsctl -l socket -r -F -d 'The daemon socket'
complete -c syncupsctl -l json -d "Print the daemon's raw result"
complete -c syncupsctl -l timeout -x -d 'Seconds to wait for the daemon'
complete -c syncupsctl -n __syncupsctl_needs_command -s V -l version -d 'Print the version'
complete -c syncupsctl -s h -l help -d 'Show help'

# Commands.
complete -c syncupsctl -n __syncupsctl_needs_command -a status -d "Show the daemon's state"
complete -c syncupsctl -n __syncupsctl_needs_command -a ping -d 'Check that the daemon answers'
complete -c syncupsctl -n __syncupsctl_needs_command -a devices -d "List the sound server's capture sources"
complete -c syncupsctl -n __syncupsctl_needs_command -a voices -d "Show what is known of each attendee's voice, or forget one"
complete -c syncupsctl -n __syncupsctl_needs_command -a themes -d 'List the themes'
complete -c syncupsctl -n __syncupsctl_needs_command -a list -d 'List the sync-ups'
complete -c syncupsctl -n __syncupsctl_needs_command -a ids -d 'Print ids and a label, tab-separated'
complete -c syncupsctl -n __syncupsctl_needs_command -a show -d 'Show one sync-up with its meetings'
complete -c syncupsctl -n __syncupsctl_needs_command -a add -d 'Create a sync-up'
complete -c syncupsctl -n __syncupsctl_needs_command -a edit -d 'Change a sync-up'
complete -c syncupsctl -n __syncupsctl_needs_command -a rm -d 'Delete a sync-up'
complete -c syncupsctl -n __syncupsctl_needs_command -a meeting -d 'Show a past meeting'
complete -c syncupsctl -n __syncupsctl_needs_command -a rm-meeting -d 'Delete a past meeting'
complete -c syncupsctl -n __syncupsctl_needs_command -a stats -d "Attendees' average floor and speaking time"
complete -c syncupsctl -n __syncupsctl_needs_command -a export -d "Write a meeting's transcript"
complete -c syncupsctl -n __syncupsctl_needs_command -a start -d 'Start recording a meeting'
complete -c syncupsctl -n __syncupsctl_needs_command -a next -d 'Pass the floor to the next speaker'
complete -c syncupsctl -n __syncupsctl_needs_command -a pause -d 'Stop the timer'
complete -c syncupsctl -n __syncupsctl_needs_command -a resume -d 'Restart the timer'
complete -c syncupsctl -n __syncupsctl_needs_command -a toggle -d 'Pause the timer, or resume it if paused'
complete -c syncupsctl -n __syncupsctl_needs_command -a absent -d 'Mark someone absent for this meeting'
complete -c syncupsctl -n __syncupsctl_needs_command -a back -d 'Someone marked absent is here after all'
complete -c syncupsctl -n __syncupsctl_needs_command -a end -d 'End the meeting'
complete -c syncupsctl -n __syncupsctl_needs_command -a session -d 'Show the meeting being recorded'
complete -c syncupsctl -n __syncupsctl_needs_command -a schedule -d "Show, set or clear the stand-ups' schedules"
complete -c syncupsctl -n __syncupsctl_needs_command -a call -d 'Send any request'
complete -c syncupsctl -n __syncupsctl_needs_command -a watch -d 'Follow the daemon'
complete -c syncupsctl -n __syncupsctl_needs_command -a help -d "Show a command's options"

# Arguments: sync-up and meeting ids from the daemon, command names, request names.
complete -c syncupsctl -n '__syncupsctl_at 0 ids show edit rm delete start meeting rm-meeting stats export schedule' \
    -a '(__syncupsctl_syncups)'
complete -c syncupsctl -n '__syncupsctl_at 1 meeting rm-meeting export' -a '(__syncupsctl_meetings)'
complete -c syncupsctl -n '__syncupsctl_at 0 help' \
    -a 'status ping devices voices themes list ids show add edit rm meeting rm-meeting stats export start next pause resume toggle absent back end session schedule call watch'
complete -c syncupsctl -n '__syncupsctl_at 0 call' \
    -a 'ping status themes.list syncups.list syncups.get syncups.create syncups.update syncups.delete meetings.get meetings.delete session.start session.get session.next session.pause session.resume session.absent session.back session.end schedule.list schedule.set schedule.clear devices voices voices.forget subscribe unsubscribe'

# Options of the commands.
set -l __syncupsctl_themes bubblegum buttercup indigo lavender magenta navy orange oxblood periwinkle poppy purple seafoam sky tan teal yellow
complete -c syncupsctl -n '__syncupsctl_using add create edit' -l duration -x -d 'Length: 90, 90s, 15m, 1h30m, 1:30'
complete -c syncupsctl -n '__syncupsctl_using add create edit' -l theme -x -a "$__syncupsctl_themes" -d 'Theme'
complete -c syncupsctl -n '__syncupsctl_using add create' -l attendee -x -d 'An attendee (repeat for each)'
complete -c syncupsctl -n '__syncupsctl_using edit' -l title -x -d 'The new title'
complete -c syncupsctl -n '__syncupsctl_using edit' -l attendee -x -d 'The whole new attendee list (repeat)'
complete -c syncupsctl -n '__syncupsctl_using edit' -l add-attendee -x -d 'Add someone at the end'
complete -c syncupsctl -n '__syncupsctl_using edit' -l remove-attendee -x -a '(__syncupsctl_attendees)' -d 'Remove someone'
complete -c syncupsctl -n '__syncupsctl_using edit' -l rename-attendee -x -a '(__syncupsctl_attendees)' -d 'Rename someone: OLD=NEW'
complete -c syncupsctl -n '__syncupsctl_using ids' -l attendees -d "The sync-up's attendees instead of its meetings"
complete -c syncupsctl -n '__syncupsctl_using export' -l format -x -a 'md\tMarkdown json\tJSON srt\tSubRip vtt\tWebVTT' -d 'Output format'
complete -c syncupsctl -n '__syncupsctl_using export' -l output -r -F -d 'Write to this file'
complete -c syncupsctl -n '__syncupsctl_using stats' -l last -x -d 'Only the N newest meetings'
complete -c syncupsctl -n '__syncupsctl_using start' -l absent -x -d 'Someone not here today (repeat)'
complete -c syncupsctl -n '__syncupsctl_using schedule' -l tz -x -d 'A tzdata zone (Europe/Berlin)'
complete -c syncupsctl -n '__syncupsctl_using schedule' -l reminder -x -d 'Minutes before the start the reminder shows'
complete -c syncupsctl -n '__syncupsctl_using schedule' -l auto-start -d 'Start the meeting at its time by itself'
complete -c syncupsctl -n '__syncupsctl_using schedule' -l no-auto-start -d 'Do not start it by itself'
complete -c syncupsctl -n '__syncupsctl_using schedule' -l clear -d 'Remove the schedule'
complete -c syncupsctl -n '__syncupsctl_using start' -l no-audio -d 'Run the timer only, recording nothing'
complete -c syncupsctl -n '__syncupsctl_using start' -l no-transcribe -d 'Record audio but make no transcript'
complete -c syncupsctl -n '__syncupsctl_using start' -l no-call -d 'Record the microphone only, not the call'
complete -c syncupsctl -n '__syncupsctl_using end' -l save -d 'Save the meeting (the default)'
complete -c syncupsctl -n '__syncupsctl_using end' -l discard -d 'Discard the meeting and its audio'
complete -c syncupsctl -n '__syncupsctl_using end' -l no-wait -d 'Return before the save is done'
complete -c syncupsctl -n '__syncupsctl_using rm delete rm-meeting' -l yes -d 'Do not ask before deleting'
complete -c syncupsctl -n '__syncupsctl_using watch' -l format -x -d 'What to print' \
    -a 'events\t"Every event, one JSON line each" json\t"State, text and session per change" waybar\t"waybar custom module" polybar\t"polybar text with colours" i3blocks\t"i3blocks JSON, reads clicks" tmux\t"tmux text with colours"'
complete -c syncupsctl -n '__syncupsctl_using watch' -l topic -x -a 'syncups session daemon' -d 'With --format events: a topic'
complete -c syncupsctl -n '__syncupsctl_using watch' -l once -d 'Print the current line and exit'
complete -c syncupsctl -n '__syncupsctl_using watch' -l text -x -d 'The text during a meeting (a template)'
complete -c syncupsctl -n '__syncupsctl_using watch' -l idle-text -x -d 'The text with no meeting'
complete -c syncupsctl -n '__syncupsctl_using watch' -l offline-text -x -d 'The text while syncupsd is down'
complete -c syncupsctl -n '__syncupsctl_using watch' -l clicks -d 'Read click events on standard input'
complete -c syncupsctl -n '__syncupsctl_using watch' -l no-clicks -d 'Do not read standard input, even for i3blocks'

# syncupsd. Devices: "default" and what `arecord -L` / `aplay -L` list.
function __syncupsd_alsa_devices --argument-names program
    echo default
    command -q $program; and $program -L 2>/dev/null | string match -rv '^\s'
end

complete -c syncupsd -f
complete -c syncupsd -s h -l help -d 'Show the help'
complete -c syncupsd -s V -l version -d 'Show the version'
complete -c syncupsd -l socket -r -F -d 'The Unix socket to listen on'
complete -c syncupsd -l data-dir -x -a '(__fish_complete_directories)' -d 'Where sync-ups.json and meeting audio live'
complete -c syncupsd -l audio-device -x -a '(__syncupsd_alsa_devices arecord)' -d 'ALSA capture device'
complete -c syncupsd -l call-audio -x -a 'auto\t"The default output\'s monitor, with a sound server" off' -d 'Record the call too'
complete -c syncupsd -l cue-device -x -a '(__syncupsd_alsa_devices aplay)' -d 'ALSA playback device for the cue'
complete -c syncupsd -l cue -d 'Play a cue when the speaker changes'
complete -c syncupsd -l no-cue -d 'Play no cue when the speaker changes'
complete -c syncupsd -l speech-engine -x -a 'auto\t"The command if set, else PocketSphinx if installed" pocketsphinx command none' -d 'Speech engine'
complete -c syncupsd -l speech-command -x -a '(__fish_complete_command)' -d 'External recognizer, run with /bin/sh -c'
complete -c syncupsd -l speech-model -x -a '(__fish_complete_directories)' -d "PocketSphinx's acoustic model"
complete -c syncupsd -l speech-dictionary -r -F -d "PocketSphinx's pronunciation dictionary"
complete -c syncupsd -l speech-language-model -r -F -d "PocketSphinx's language model"
complete -c syncupsd -l speech-grammar -r -F -d 'A JSGF grammar for PocketSphinx'
complete -c syncupsd -l voice-model -r -F -d "The speaker encoder's weights, or none"
complete -c syncupsd -l max-connections -x -d 'The most clients connected at once'
complete -c syncupsd -l busy-poll -x -d 'How long the event loop polls before sleeping'
complete -c syncupsd -l log-level -x -a 'debug info notice warning error' -d 'The least important messages logged'
complete -c syncupsd -l config -r -F -d 'Read this config file instead of the default one'
complete -c syncupsd -l no-config -d 'Read no config file'
