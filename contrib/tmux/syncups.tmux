# syncups in tmux's status line: who is speaking in the meeting being recorded, and the time left.
#
# Load it from ~/.tmux.conf with
#     source-file ~/.config/tmux/syncups.tmux
# or paste these lines into ~/.tmux.conf. See README.md in this directory.

# Redraw the status line, and so run the command below, every second.
set -g status-interval 1

# Leave room for the meeting: "#[fg=##…,bg=##…] Blob Jr 2/6 · 11:48 (paused) #[default]",
# "… · call audio: silent" while a recorded call has carried nothing for 10 s, and the clock.
set -g status-right-length 80

# Put the meeting in front of the clock. --once prints the current line and exits. During a
# meeting the line is coloured with the sync-up's theme (every # doubled, as tmux wants for
# the output of #()); otherwise it is "no meeting", or "syncupsd offline" when the daemon is
# not running.
set -g status-right '#(syncupsctl watch --format tmux --once) %H:%M'
