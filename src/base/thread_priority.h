// Thread priority for the producers of an ordered pipeline.
#pragma once

namespace exitscope {

// Lowers the calling thread's priority by `nice_increment` nice steps (Linux keeps a nice value per
// thread). Best effort: an error leaves the priority as it was.
void LowerThreadPriority(int nice_increment);

}  // namespace exitscope
