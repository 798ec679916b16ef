// Readers of the channel-data file formats that carry their own geometry (internal to
// das_input*.cpp): PICMUS's HDF5 layout and USTB's UFF.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "usrecon/io/hdf5.hpp"
#include "usrecon/recon/das_pipeline.hpp"

namespace usrecon::recon::detail {

/// The uff.channel_data group to read from a file whose groups are `groups`: the one `var` names
/// (a group path, with or without its leading '/'), or the file's only one when `var` is empty.
/// nullopt when there is none (or `var` names something else, e.g. a dataset); throws Error naming
/// the candidates when there are several and `var` does not choose.
std::optional<std::string> ustb_channel_data_group(const std::filesystem::path& path,
                                                   const std::vector<io::Hdf5Group>& groups,
                                                   const std::string& var);

/// Reads frame `input.frame` of the USTB uff.channel_data object at `group`: its data as
/// ChannelData (IQ data, with a modulation frequency, with their Q part), and into *geometry its
/// sampling frequency, sound speed, initial time, linear array, and its sequence: plane-wave
/// angles, synthetic-aperture firing elements, or the virtual sources of diverging waves (behind
/// the array) or focused waves (focal points in front of it), with each wave's delay (and source
/// distance).
ChannelData read_ustb_channel_data(const std::filesystem::path& path, const std::vector<io::Hdf5Group>& groups,
                                   const std::string& group, const ChannelInput& input, FileGeometry* geometry);

/// The frames of the USTB uff.channel_data object at `group` (its data's leading axis when it has
/// four; MATLAB drops it for one frame), from the file's listing alone.
int ustb_frames(const std::filesystem::path& path, const std::string& group);

/// Element pitch of a uniform linear array centred on x = 0 at y = z = 0, from element positions
/// x[e], y[e], z[e] (metres); throws Error naming `what` for any other array.
double centred_linear_array_pitch(const std::vector<double>& x, const std::vector<double>& y,
                                  const std::vector<double>& z, const std::string& what);

}  // namespace usrecon::recon::detail
