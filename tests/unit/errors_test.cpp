// An error's message is printed as a C string: a byte of a quoted value never cuts it short or
// reaches the terminal as a control sequence.
#include "core/errors.hpp"

#include <string>

#include <gtest/gtest.h>

using namespace tiletune;

TEST(errors, a_control_byte_in_a_quoted_value_is_written_as_hex_and_the_message_kept_whole) {
  const std::string value("bf16\0x\x1b[31m\x7f", 12);
  const usage_error u("unknown dtype '" + value + "': expected one of f32, bf16");
  EXPECT_STREQ(u.what(), "unknown dtype 'bf16\\x00x\\x1b[31m\\x7f': expected one of f32, bf16");
  const environment_error e(std::string("file a\0b.sqlite is damaged", 26));
  EXPECT_STREQ(e.what(), "file a\\x00b.sqlite is damaged");
  // Line breaks, tabs and UTF-8 stay as they are.
  EXPECT_STREQ(usage_error("two\nlines\tand caf\xc3\xa9").what(), "two\nlines\tand caf\xc3\xa9");
}
