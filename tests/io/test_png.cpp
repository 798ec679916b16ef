// PNG writing (gray and BGR) and reading back as gray.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io_test_support.hpp"
#include "usrecon/io/file.hpp"
#include "usrecon/io/png.hpp"

namespace usrecon::io {
namespace {

using testing::contains;
using testing::message_of;

class IoPng : public testing::TempDirTest {};

TEST_F(IoPng, GrayRoundTripIsLossless) {
  constexpr int kWidth = 7, kHeight = 5;  // odd sizes catch row-stride mistakes
  std::vector<std::uint8_t> pixels(kWidth * kHeight);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(i * 37);
  const auto path = dir_ / "frame.png";
  write_png_gray8(path, kWidth, kHeight, pixels);

  EXPECT_EQ(testing::slurp(path).substr(0, 8), "\x89PNG\r\n\x1a\n");
  int width = 0, height = 0;
  EXPECT_EQ(read_png_gray8(path, width, height), pixels);
  EXPECT_EQ(width, kWidth);
  EXPECT_EQ(height, kHeight);
  EXPECT_EQ(directory_listing(), std::vector<std::string>{"frame.png"});
}

// encode_png_gray8 gives the bytes write_png_gray8 writes (a batch stages them itself), and
// refuses a wrong pixel count the same way.
TEST_F(IoPng, EncodedBytesAreTheWrittenFile) {
  constexpr int kWidth = 9, kHeight = 4;
  std::vector<std::uint8_t> pixels(kWidth * kHeight);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(255 - i * 7);
  const auto path = dir_ / "frame.png";
  write_png_gray8(path, kWidth, kHeight, pixels);
  const std::vector<std::byte> encoded = encode_png_gray8(kWidth, kHeight, pixels);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(encoded.data()), encoded.size()), testing::slurp(path));
  const std::string refusal = message_of<Error>([&] { encode_png_gray8(kWidth, kHeight + 1, pixels); });
  EXPECT_TRUE(contains(refusal, "got 36 bytes, expected 45"));
}

TEST_F(IoPng, BgrChannelOrderIsKept) {
  // Pixels: gray 200, pure blue, pure green, pure red (B, G, R byte order).
  const std::vector<std::uint8_t> bgr = {200, 200, 200, 255, 0, 0, 0, 255, 0, 0, 0, 255};
  const auto path = dir_ / "colour.png";
  write_png_bgr8(path, 2, 2, bgr);
  int width = 0, height = 0;
  const std::vector<std::uint8_t> gray = read_png_gray8(path, width, height);
  EXPECT_EQ(width, 2);
  EXPECT_EQ(height, 2);
  // Gray = 0.114 B + 0.587 G + 0.299 R (within 1 for the decoder's fixed-point rounding);
  // swapped blue and red would give 76 and 29.
  const std::vector<int> expected = {200, 29, 150, 76};
  ASSERT_EQ(gray.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(gray[i], expected[i], 1) << i;
}

TEST_F(IoPng, WrongPixelCountIsRefusedBeforeWriting) {
  const auto path = dir_ / "bad.png";
  const std::vector<std::uint8_t> pixels(11);
  const std::string message =
      message_of<usrecon::Error>([&] { write_png_gray8(path, 4, 3, pixels); });
  EXPECT_TRUE(contains(message, path.string()));
  EXPECT_TRUE(contains(message, "got 11 bytes, expected 12"));
  EXPECT_TRUE(contains(message_of<usrecon::Error>([&] { write_png_bgr8(path, 2, 2, pixels); }),
                       "expected 12 (2x2 pixels x 3 channels)"));
  EXPECT_TRUE(contains(message_of<usrecon::Error>([&] { write_png_gray8(path, 0, 3, {}); }),
                       "image size 0x3 is not positive"));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(IoPng, WriteIntoMissingDirectoryNamesThePath) {
  const auto path = dir_ / "no-dir" / "frame.png";
  const std::vector<std::uint8_t> pixels(4, 9);
  const std::string message =
      message_of<OutputError>([&] { write_png_gray8(path, 2, 2, pixels); });
  EXPECT_TRUE(contains(message, path.string()));
  EXPECT_TRUE(contains(message, "its directory \"" + (dir_ / "no-dir").string() + "\" does not exist")) << message;
}

TEST_F(IoPng, ReadingNonImagesIsRefused) {
  int width = -1, height = -1;
  for (const auto& [file_name, contents] :
       std::vector<std::pair<std::string, std::string>>{
           {"text.png", "this is not a PNG"},
           {"empty.png", ""},
           {"truncated.png", "\x89PNG\r\n\x1a\n\0\0\0\rIHDR"}}) {
    const auto path = make_file(file_name, contents);
    const std::string message =
        message_of<InputError>([&] { read_png_gray8(path, width, height); });
    EXPECT_TRUE(contains(message, path.string()));
    EXPECT_TRUE(contains(message, "is not a decodable image"));
  }
  EXPECT_EQ(width, -1);  // untouched on failure
  const auto missing = dir_ / "missing.png";
  EXPECT_TRUE(contains(message_of<InputError>([&] { read_png_gray8(missing, width, height); }),
                       missing.string() + "\" does not exist"));
}

}  // namespace
}  // namespace usrecon::io
