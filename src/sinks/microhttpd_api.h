// libmicrohttpd's functions that serve's endpoint calls, loaded when the endpoint starts rather
// than when exitscope starts. Linked, the library brings GnuTLS and eight more shared libraries
// (p11-kit, nettle, gmp …) whose relocations and constructors every command paid at start, about
// 1.5 ms and 4.9 M instructions (callgrind, `exitscope --version`: 7.4 M linked, 2.5 M without), for
// an HTTP server that only `serve` runs.
// In: the library's SONAME (the build finds it: EXITSCOPE_MICROHTTPD_SONAME). Out: a table of
// function pointers, the same one for the life of the process, or an error naming what to install.
#pragma once

#include <microhttpd.h>

#include "base/result.h"

namespace exitscope {

struct MicrohttpdApi {
  decltype(&MHD_start_daemon) start_daemon;
  decltype(&MHD_stop_daemon) stop_daemon;
  decltype(&MHD_get_daemon_info) get_daemon_info;
  decltype(&MHD_get_connection_info) get_connection_info;
  decltype(&MHD_lookup_connection_value) lookup_connection_value;
  decltype(&MHD_create_response_from_buffer) create_response_from_buffer;
  decltype(&MHD_add_response_header) add_response_header;
  decltype(&MHD_queue_response) queue_response;
  decltype(&MHD_destroy_response) destroy_response;
};

// The SONAME serve loads (the one exitscope was built against).
const char* MicrohttpdSoname();

// Loads `soname` (default: MicrohttpdSoname()) once and resolves every function; later calls with
// the same name return the same table. Errors: kExitUnavailable when the library or one of its
// functions is missing, with the Debian package to install as the hint.
Result<const MicrohttpdApi*> LoadMicrohttpd(const char* soname = nullptr);

}  // namespace exitscope
