// The checks each fuzz target applies to one input, shared by the libFuzzer entry points
// (fuzz_*.cpp, built by tools/fuzz.sh) and the IoFuzzRegression tests, which run every seed and
// every saved crash through them in the normal test suite.
//
// A check throws ContractViolation when the parser breaks its contract; anything the parser may
// legitimately do with a bad input (throw io::InputError naming the input) is accepted. Under
// libFuzzer an escaping exception aborts, which counts as a crash; ASan/UBSan catch the rest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "usrecon/io/file.hpp"
#include "usrecon/io/npy.hpp"
#include "usrecon/io/source_txt.hpp"

namespace usrecon::fuzz {

struct ContractViolation : std::logic_error {
  using std::logic_error::logic_error;
};

inline void require(bool condition, const std::string& what) {
  if (!condition) throw ContractViolation(what);
}

/// An InputError must name the input first and be printable ASCII (binary input is escaped).
inline void check_input_error(const io::InputError& error, const std::string& name) {
  const std::string_view message = error.what();
  require(message.starts_with(name + ": "), "error does not start with the name: " + std::string(message));
  for (const char c : message) {
    require(c >= 0x20 && c < 0x7F, "error message has a non-printable byte: " + std::string(message));
  }
}

/// A plain reference reader for source.txt, to compare with the parser: tokens split on ASCII
/// whitespace, each an optional sign then decimal digits, within int32. Returns false for any
/// input the format refuses.
inline bool reference_source_txt(std::string_view text, std::vector<std::int32_t>& values) {
  const auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  std::size_t i = 0;
  while (i < text.size()) {
    if (is_space(text[i])) {
      ++i;
      continue;
    }
    bool negative = false;
    if (text[i] == '+' || text[i] == '-') negative = text[i++] == '-';
    const std::size_t digits_start = i;
    std::int64_t magnitude = 0;
    for (; i < text.size() && !is_space(text[i]); ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
      magnitude = magnitude * 10 + (text[i] - '0');
      if (magnitude > std::int64_t{1} << 32) magnitude = std::int64_t{1} << 32;  // saturate
    }
    if (i == digits_start) return false;
    const std::int64_t value = negative ? -magnitude : magnitude;
    if (value < INT32_MIN || value > INT32_MAX) return false;
    values.push_back(static_cast<std::int32_t>(value));
  }
  return true;
}

/// source.txt: the first two bytes choose the layout (1-4 channels x 1-8 samples), the rest is
/// the text. The parser must accept exactly what the reference reader accepts, with the same
/// values, and refuse everything else with an InputError naming the input.
inline void check_source_txt(std::span<const std::uint8_t> data) {
  if (data.size() < 2) return;
  const std::size_t channels = 1 + data[0] % 4, samples = 1 + data[1] % 8;
  const std::string_view text(reinterpret_cast<const char*>(data.data()) + 2, data.size() - 2);
  const std::string name = "fuzz.txt";
  std::vector<std::int32_t> expected;
  const bool reference_ok =
      reference_source_txt(text, expected) && expected.size() == channels * samples;
  try {
    const std::vector<std::int32_t> rf = io::parse_source_txt(text, channels, samples, name);
    require(reference_ok, "the parser accepted an input the reference reader refuses");
    require(rf == expected, "the parser's values differ from the reference reader's");
  } catch (const io::InputError& error) {
    check_input_error(error, name);
    require(!reference_ok, "the parser refused a valid input: " + std::string(error.what()));
  }
}

/// .npy: anything parsed must be self-consistent and survive a round trip through the encoder.
inline void check_npy(std::span<const std::uint8_t> data) {
  const std::string name = "fuzz.npy";
  io::NpyArray array;
  try {
    array = io::parse_npy(std::as_bytes(data), name);
  } catch (const io::InputError& error) {
    check_input_error(error, name);
    return;
  }
  const std::size_t item_size = io::dtype_size(array.dtype);
  require(array.data.size() == array.size() * item_size, "data size does not match the shape");
  if (array.dtype != io::DType::c64 && array.dtype != io::DType::c128) {
    require(array.to_double().size() == array.size(), "to_double has the wrong length");
  }
  std::vector<std::byte> image;
  try {
    image = io::encode_npy(array.dtype, array.shape, array.data.data());
  } catch (const Error& error) {
    // Legitimate only for a shape whose header text exceeds format 1.0's 64 KiB.
    require(std::string_view(error.what()).find("too long") != std::string_view::npos, error.what());
    return;
  }
  const io::NpyArray again = io::parse_npy(image, "round trip");
  require(again.dtype == array.dtype && again.shape == array.shape && again.data == array.data,
          "the array changed in an encode/parse round trip");
}

}  // namespace usrecon::fuzz
