// libpulse for Swift: the asynchronous API (a pa_mainloop for introspection, and one per record stream,
// iterated by its capture thread with bounded waits). PipeWire's pipewire-pulse serves the same protocol.
#pragma once
#include <pulse/pulseaudio.h>
#include <pulse/error.h>

// PA_INVALID_INDEX is a cast macro, which Swift does not import.
static inline uint32_t syncups_pa_invalid_index(void) { return PA_INVALID_INDEX; }
