// PNG encoding and decoding through OpenCV's imgcodecs, in memory; the file itself goes through
// read_file / write_file_atomic so that errors and atomicity match every other format.
#include "usrecon/io/png.hpp"

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <limits>
#include <string>

#include "usrecon/io/file.hpp"

namespace usrecon::io {
namespace {

/// Encodes an 8-bit image with `channels` interleaved channels per pixel as PNG bytes. `what`
/// starts every message: "PNG <path>" when writing a file, "PNG image" otherwise.
std::vector<std::byte> encode_png_u8(const std::string& what, int width, int height, int channels,
                                     std::span<const std::uint8_t> pixels) {
  if (width <= 0 || height <= 0) {
    throw Error(what + ": image size " + std::to_string(width) + "x" + std::to_string(height) +
                " is not positive");
  }
  const std::size_t expected = static_cast<std::size_t>(width) * static_cast<std::size_t>(height) *
                               static_cast<std::size_t>(channels);
  if (pixels.size() != expected) {
    throw Error(what + ": got " + std::to_string(pixels.size()) + " bytes, expected " +
                std::to_string(expected) + " (" + std::to_string(width) + "x" + std::to_string(height) +
                " pixels x " + std::to_string(channels) + " channels)");
  }
  // cv::Mat wants a mutable pointer, but imencode only reads through it.
  const cv::Mat image(height, width, CV_8UC(channels), const_cast<std::uint8_t*>(pixels.data()));
  std::vector<uchar> encoded;
  try {
    if (!cv::imencode(".png", image, encoded)) throw OutputError(what + ": encoding failed");
  } catch (const cv::Exception& error) {
    throw OutputError(what + ": encoding failed: " + error.what());
  }
  const auto bytes = std::as_bytes(std::span<const uchar>(encoded));
  return {bytes.begin(), bytes.end()};
}

void write_png_u8(const std::filesystem::path& path, int width, int height, int channels,
                  std::span<const std::uint8_t> pixels) {
  write_file_atomic(path, encode_png_u8("PNG " + path.string(), width, height, channels, pixels));
}

}  // namespace

std::vector<std::byte> encode_png_gray8(int width, int height, std::span<const std::uint8_t> pixels_row_major) {
  return encode_png_u8("PNG image", width, height, 1, pixels_row_major);
}

void write_png_gray8(const std::filesystem::path& path, int width, int height,
                     std::span<const std::uint8_t> pixels_row_major) {
  write_png_u8(path, width, height, 1, pixels_row_major);
}

void write_png_bgr8(const std::filesystem::path& path, int width, int height,
                    std::span<const std::uint8_t> bgr) {
  write_png_u8(path, width, height, 3, bgr);
}

std::vector<std::uint8_t> read_png_gray8(const std::filesystem::path& path, int& width,
                                         int& height) {
  const std::string contents = read_file(path);
  const auto not_an_image = [&](const std::string& detail) {
    return InputError("input file \"" + path.string() + "\" is not a decodable image" + detail);
  };
  if (contents.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw not_an_image(" (too large for the image decoder)");
  }
  cv::Mat image;
  try {
    // imdecode reads from the buffer only; the Mat header needs a mutable pointer.
    const cv::Mat buffer(1, static_cast<int>(contents.size()), CV_8UC1,
                         const_cast<char*>(contents.data()));
    if (!contents.empty()) image = cv::imdecode(buffer, cv::IMREAD_GRAYSCALE);
  } catch (const cv::Exception& error) {
    throw not_an_image(std::string(": ") + error.what());
  }
  if (image.empty() || image.type() != CV_8UC1) throw not_an_image("");
  if (!image.isContinuous()) image = image.clone();
  width = image.cols;
  height = image.rows;
  return {image.data, image.data + image.total()};
}

}  // namespace usrecon::io
