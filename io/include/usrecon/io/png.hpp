// 8-bit PNG images: writing for reconstructed frames, reading for tests and viewers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace usrecon::io {

/// A grayscale image as PNG file bytes, pixels_row_major[y * width + x]. Throws usrecon::Error for
/// a pixel count that is not width * height (or a size that is not positive), OutputError when
/// encoding fails.
std::vector<std::byte> encode_png_gray8(int width, int height, std::span<const std::uint8_t> pixels_row_major);

/// Writes a grayscale image atomically. pixels_row_major[y * width + x], one byte per pixel.
/// Throws usrecon::Error when the pixel count is not width * height (or a size is not positive),
/// OutputError when encoding or writing fails.
void write_png_gray8(const std::filesystem::path& path, int width, int height,
                     std::span<const std::uint8_t> pixels_row_major);

/// Writes a colour image atomically. bgr[(y * width + x) * 3 + {0, 1, 2}] = blue, green, red
/// (OpenCV's channel order). Errors as write_png_gray8, with width * height * 3 bytes expected.
void write_png_bgr8(const std::filesystem::path& path, int width, int height,
                    std::span<const std::uint8_t> bgr);

/// Reads an image file (any format OpenCV decodes; colour is converted to gray) as 8-bit gray,
/// row-major, and sets width and height in pixels. Throws InputError naming the file when it
/// cannot be read or is not a decodable image.
std::vector<std::uint8_t> read_png_gray8(const std::filesystem::path& path, int& width,
                                         int& height);

}  // namespace usrecon::io
