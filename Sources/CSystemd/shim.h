// libsystemd for Swift: sd-daemon (notify, socket activation, watchdog) and sd-journal (native logging).
#pragma once
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
