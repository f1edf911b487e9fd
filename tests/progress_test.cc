// The progress line of report and dump: a share of the input's bytes, never past 100 % (a
// compressed trace.dat whose header understates its sizes is read past its stated end), nothing
// for an input of unknown size, and blanked when the read is done.
#include <gtest/gtest.h>

#include <string>

#include "cli/command.h"

namespace exitscope {
namespace {

TEST(Progress, AShareOfTheBytesCappedAtAHundredPercent) {
  testing::internal::CaptureStderr();
  PrintProgress(50, 200);
  PrintProgress(300, 200);
  PrintProgress(5, 0);
  ClearProgress();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "\rreading  25.0%\rreading 100.0%\r" + std::string(20, ' ') + "\r");
}

}  // namespace
}  // namespace exitscope
