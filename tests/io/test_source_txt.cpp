// source.txt parsing and writing: equivalent layouts, every error message, round trips, speed.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "io_test_support.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/source_txt.hpp"

namespace usrecon::io {
namespace {

using testing::contains;
using testing::message_of;

class IoSourceTxt : public testing::TempDirTest {};

const std::string kName = "probe/source.txt";

/// The message parse_source_txt gives for `text` read as channels x samples.
std::string parse_error(std::string_view text, std::size_t channels, std::size_t samples) {
  return message_of<InputError>([&] { parse_source_txt(text, channels, samples, kName); });
}

/// For EXPECT_TRUE: parsing `text` fails with a message that starts with the file name and
/// contains `detail`.
::testing::AssertionResult refused_with(std::string_view text, std::size_t channels,
                                        std::size_t samples, const std::string& detail) {
  const std::string message = parse_error(text, channels, samples);
  if (message.rfind(kName + ": ", 0) != 0) {
    return ::testing::AssertionFailure() << "message does not start with the file name: "
                                         << message;
  }
  return contains(message, detail);
}

TEST_F(IoSourceTxt, ParsesSeedFormatChannelMajor) {
  // The seed writes one channel per line, values separated by single spaces.
  const std::vector<std::int32_t> rf = parse_source_txt("1 -2 3\n40 50 -60\n", 2, 3, kName);
  EXPECT_EQ(rf, (std::vector<std::int32_t>{1, -2, 3, 40, 50, -60}));
}

TEST_F(IoSourceTxt, SeparatorVariantsGiveIdenticalResults) {
  const std::vector<std::int32_t> expected = {7, -8, 9, 10, +11, -12};
  const std::vector<std::string> variants = {
      "7 -8 9\n10 11 -12\n",               // seed format
      "7 -8 9\r\n10 11 -12\r\n",           // CRLF
      "7\t-8\t9\n10\t11\t-12",             // tabs, no final newline
      "7\n-8\n9\n10\n11\n-12\n",           // one value per line
      "7 -8 9\n10 11 -12\n\n\n   \n",      // trailing blank lines
      "  7   -8 9 10\n11 -12",               // irregular spacing, channels not on their own lines
      "7\f-8\v9\r10 +11 -12\n",            // form feed, vertical tab, lone CR, explicit '+'
      "+7 -8 +9 +10 +11 -12",              // leading '+' everywhere
  };
  for (const std::string& text : variants) {
    EXPECT_EQ(parse_source_txt(text, 2, 3, kName), expected) << "text: " << text;
  }
}

TEST_F(IoSourceTxt, AcceptsInt32Limits) {
  const auto rf = parse_source_txt("2147483647 -2147483648 -0 +0 007", 1, 5, kName);
  EXPECT_EQ(rf, (std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::max(),
                                           std::numeric_limits<std::int32_t>::min(), 0, 0, 7}));
}

TEST_F(IoSourceTxt, EmptyFileIsRefused) {
  EXPECT_TRUE(refused_with("", 2, 3, "contains no values, expected 6 (2 channels x 3 samples)"));
}

TEST_F(IoSourceTxt, WhitespaceOnlyFileCountsAsEmpty) {
  EXPECT_TRUE(refused_with(" \n\t\r\n\f\v  \n", 2, 3, "contains no values"));
}

TEST_F(IoSourceTxt, NonIntegerTokensAreQuotedWithLineAndColumn) {
  for (const std::string token :
       {"nan", "1.5", "1e999", "0x10", "--5", "12abc", "+", "-", "++5", "+-5", "5-", "inf",
        "1,2"}) {
    // The bad token sits on line 2 at column 4 (after "10 "); line 1 ends in CRLF.
    const std::string text = "1 2 3\r\n10 " + token + " 12\n";
    EXPECT_TRUE(refused_with(text, 2, 3,
                             "\"" + token + "\" at line 2, column 4 is not a decimal integer"));
  }
}

TEST_F(IoSourceTxt, ColumnCountsBytesIncludingTabs) {
  EXPECT_TRUE(refused_with("1\n2\t\tx 3\n", 1, 4, "\"x\" at line 2, column 4"));
}

TEST_F(IoSourceTxt, BinaryGarbageIsEscapedInMessage) {
  const std::string text = std::string("1 2 \x01\xff\"\\z\0q", 11) + " 4";
  const std::string message = parse_error(text, 1, 4);
  EXPECT_TRUE(contains(message, "\"\\x01\\xFF\\x22\\x5Cz\\x00q\" at line 1, column 5"));
  for (const char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    EXPECT_TRUE(byte >= 0x20 && byte < 0x7F) << "unprintable byte " << int(byte) << " in message";
  }
}

TEST_F(IoSourceTxt, LongTokenIsShortened) {
  const std::string token = "123456789012345678901234567890abc";
  EXPECT_TRUE(
      refused_with("0 " + token, 1, 2, "\"12345678901234567890...\" at line 1, column 3"));
  EXPECT_FALSE(contains(parse_error("0 " + token, 1, 2), token));
}

TEST_F(IoSourceTxt, ValuesOutsideInt32AreRefused) {
  EXPECT_TRUE(refused_with("1\n2\n0 0 2147483648", 1, 5,
                           kName + ": 2147483648 at line 3, column 5 is outside the 32-bit "
                                   "integer range"));
  EXPECT_TRUE(refused_with("-2147483649 0", 1, 2,
                           "-2147483649 at line 1, column 1 is outside the 32-bit integer range"));
  EXPECT_TRUE(refused_with("+3000000000 0", 1, 2,
                           "+3000000000 at line 1, column 1 is outside the 32-bit integer range"));
  // Beyond even 64 bits: still a range error, never a wrap-around.
  EXPECT_TRUE(refused_with("0 99999999999999999999", 1, 2,
                           "99999999999999999999 at line 1, column 3 is outside the 32-bit"));
}

TEST_F(IoSourceTxt, TooFewValuesReportsCounts) {
  EXPECT_TRUE(refused_with("1 2 3\n4 5\n", 2, 3,
                           "found 5 values, expected 6 (2 channels x 3 samples)"));
}

TEST_F(IoSourceTxt, TooFewValuesAtFullSize) {
  std::string text;
  for (int i = 0; i < 128 * 2000 - 1; ++i) text += "1 ";
  EXPECT_TRUE(refused_with(text, 128, 2000,
                           "found 255999 values, expected 256000 (128 channels x 2000 samples)"));
}

// A text shorter than the frame's values could be written in (one digit each, one separator
// between two) is refused before the frame's memory is asked for, with the parser's own message:
// its values are counted, not stored. One byte more and the check passes it to the parser. The
// text's own length is the independent reference: 6 values written "1 1 1 1 1 1" are 11 bytes.
TEST_F(IoSourceTxt, SizeCheckRefusesOnlyTextsTooShortForTheFrame) {
  const auto size_error = [](std::string_view text, std::size_t channels, std::size_t samples) {
    return message_of<InputError>([&] { check_source_txt_size(text, channels, samples, kName); });
  };
  EXPECT_NO_THROW(check_source_txt_size("1 1 1 1 1 1", 2, 3, kName));
  EXPECT_NO_THROW(check_source_txt_size("1 1 1 1 1  ", 2, 3, kName));  // long enough; the parser counts
  EXPECT_EQ(size_error("1 1 1 1 1", 2, 3), kName + ": found 5 values, expected 6 (2 channels x 3 samples)");
  EXPECT_EQ(size_error("12 34", 2, 3), kName + ": found 2 values, expected 6 (2 channels x 3 samples)");
  EXPECT_EQ(size_error("", 1, 1), kName + ": contains no values, expected 1 (1 channels x 1 samples)");
  EXPECT_EQ(size_error("1 x", 2, 3), kName + ": \"x\" at line 1, column 3 is not a decimal integer");
  EXPECT_NO_THROW(check_source_txt_size("7", 1, 1, kName));
  // The seed's largest options, 1024 x 2^24 values, against a text of 990 bytes: refused by
  // counting, with no 64 GiB frame.
  std::string text;
  for (int i = 0; i < 330; ++i) text += "-5 ";
  EXPECT_EQ(size_error(text, 1024, std::size_t{1} << 24),
            kName + ": found 330 values, expected 17179869184 (1024 channels x 16777216 samples)");
  EXPECT_EQ(parse_error(text, 1024, std::size_t{1} << 24),
            kName + ": found 330 values, expected 17179869184 (1024 channels x 16777216 samples)");
}

TEST_F(IoSourceTxt, TooManyValuesAreAllCounted) {
  EXPECT_TRUE(refused_with("1 2 3\n4 5 6\n7 8 9\n10 11 12\n", 2, 3,
                           "found 12 values, expected 6 (2 channels x 3 samples)"));
}

TEST_F(IoSourceTxt, BadTokenAfterTheExpectedCountIsStillReported) {
  EXPECT_TRUE(refused_with("1 2 3 4 5 6 oops", 2, 3, "\"oops\" at line 1, column 13"));
}

TEST_F(IoSourceTxt, OverflowingLayoutIsRefused) {
  const std::size_t huge = std::size_t{1} << 40;
  EXPECT_THROW(parse_source_txt("1", huge, huge, kName), usrecon::Error);
}

TEST_F(IoSourceTxt, ReadErrorsNameThePath) {
  const auto missing = dir_ / "source.txt";
  const std::string missing_message =
      message_of<InputError>([&] { read_source_txt(missing, 2, 3); });
  EXPECT_TRUE(contains(missing_message, missing.string()));
  EXPECT_TRUE(contains(missing_message, "does not exist"));

  const auto short_file = make_file("short.txt", "1 2 3\n");
  const std::string short_message =
      message_of<InputError>([&] { read_source_txt(short_file, 2, 3); });
  EXPECT_TRUE(contains(short_message, short_file.string() + ": found 3 values, expected 6"));
}

TEST_F(IoSourceTxt, WriteProducesSeedFormat) {
  const std::vector<std::int32_t> rf = {1, -2, 3, 2147483647, -2147483648, 0};
  const auto path = dir_ / "source.txt";
  write_source_txt(path, rf, 2, 3);
  EXPECT_EQ(testing::slurp(path), "1 -2 3 2147483647 -2147483648 0\n");
}

TEST_F(IoSourceTxt, WriteThenReadRoundTripsAtFullSize) {
  constexpr std::size_t kChannels = 128, kSamples = 2000;
  std::vector<std::int32_t> rf(kChannels * kSamples);
  std::uint32_t state = 12345;  // deterministic pseudo-random values over the whole int32 range
  for (std::int32_t& value : rf) {
    state = state * 1664525u + 1013904223u;
    value = static_cast<std::int32_t>(state);
  }
  rf[0] = std::numeric_limits<std::int32_t>::min();
  rf[1] = std::numeric_limits<std::int32_t>::max();
  const auto path = dir_ / "source.txt";
  write_source_txt(path, rf, kChannels, kSamples);
  EXPECT_EQ(read_source_txt(path, kChannels, kSamples), rf);
  EXPECT_EQ(directory_listing(), std::vector<std::string>{"source.txt"});
}

TEST_F(IoSourceTxt, WriteRefusesWrongValueCount) {
  const std::vector<std::int32_t> rf(5, 1);
  const auto path = dir_ / "source.txt";
  const std::string message = message_of<usrecon::Error>([&] { write_source_txt(path, rf, 2, 3); });
  EXPECT_TRUE(contains(message, "rf has 5 values, expected 6"));
  EXPECT_FALSE(std::filesystem::exists(path));
}

// The seed's full size (128 x 2000), every value compared. Its speed is bench_bmode's
// BM_ParseSourceTxt (a few ms); a unit test times nothing.
TEST_F(IoSourceTxt, ParsesFullSizeFile) {
  constexpr std::size_t kChannels = 128, kSamples = 2000;
  std::string text;
  std::vector<std::int32_t> expected;
  for (std::size_t channel = 0; channel < kChannels; ++channel) {
    for (std::size_t sample = 0; sample < kSamples; ++sample) {
      const int value = static_cast<int>((channel * 7919 + sample * 104729) % 65536) - 32768;
      expected.push_back(value);
      text += std::to_string(value);
      text += sample + 1 < kSamples ? ' ' : '\n';
    }
  }
  EXPECT_EQ(parse_source_txt(text, kChannels, kSamples, kName), expected);
}

}  // namespace
}  // namespace usrecon::io
