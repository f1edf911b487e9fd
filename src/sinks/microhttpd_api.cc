#include "sinks/microhttpd_api.h"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <string>

#if !defined(EXITSCOPE_MICROHTTPD_SONAME) || !defined(EXITSCOPE_MICROHTTPD_PACKAGE)
#error "the build defines EXITSCOPE_MICROHTTPD_SONAME and _PACKAGE (cmake/scripts/microhttpd.cmake)"
#endif

namespace exitscope {

namespace {

Error Unavailable(const std::string& soname, const std::string& why) {
  return MakeError(kExitUnavailable, "serve.http-library",
                   "serve's HTTP endpoint needs " + soname + ", which cannot be loaded: " + why,
                   "install it: apt install " EXITSCOPE_MICROHTTPD_PACKAGE
                   " (the exitscope package depends on it; a hand-built binary may not have it)");
}

// *missing: the first name not found.
template <typename Fn>
void Resolve(void* handle, const char* name, Fn* out, std::string* missing) {
  *out = reinterpret_cast<Fn>(::dlsym(handle, name));
  if (!*out && missing->empty()) *missing = name;
}

}  // namespace

const char* MicrohttpdSoname() { return EXITSCOPE_MICROHTTPD_SONAME; }

Result<const MicrohttpdApi*> LoadMicrohttpd(const char* soname) {
  static std::mutex mu;
  static std::map<std::string, MicrohttpdApi> loaded;  // never unloaded: the daemon's threads use it
  const std::string name = soname ? soname : MicrohttpdSoname();
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded.find(name); it != loaded.end()) return &it->second;
  void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = ::dlerror();
    return Unavailable(name, err ? err : "dlopen failed");
  }
  MicrohttpdApi api{};
  std::string missing;
  Resolve(handle, "MHD_start_daemon", &api.start_daemon, &missing);
  Resolve(handle, "MHD_stop_daemon", &api.stop_daemon, &missing);
  Resolve(handle, "MHD_get_daemon_info", &api.get_daemon_info, &missing);
  Resolve(handle, "MHD_get_connection_info", &api.get_connection_info, &missing);
  Resolve(handle, "MHD_lookup_connection_value", &api.lookup_connection_value, &missing);
  Resolve(handle, "MHD_create_response_from_buffer", &api.create_response_from_buffer, &missing);
  Resolve(handle, "MHD_add_response_header", &api.add_response_header, &missing);
  Resolve(handle, "MHD_queue_response", &api.queue_response, &missing);
  Resolve(handle, "MHD_destroy_response", &api.destroy_response, &missing);
  if (!missing.empty()) {
    ::dlclose(handle);
    return Unavailable(name, "it has no " + missing + " (another libmicrohttpd than the one built against?)");
  }
  return &loaded.emplace(name, api).first->second;
}

}  // namespace exitscope
