// What `exitscope --version` says beyond the project version: the build, from `git describe` when
// built from a git checkout ("afe4950-dirty"), else the EXITSCOPE_BUILD_ID given to cmake, else
// empty (a release tarball). Generated at build time by cmake/scripts/build_info.cmake into the
// binary alone, so a new commit relinks exitscope without recompiling the library.
#pragma once

namespace exitscope {

const char* BuildId();

}  // namespace exitscope
