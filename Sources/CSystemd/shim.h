// libsystemd for Swift: sd-daemon (notify, socket activation, watchdog), sd-journal (native logging) and
// sd-bus (the desktop's session bus: MPRIS, notifications). Only sd-bus's non-variadic calls are used.
#pragma once
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
