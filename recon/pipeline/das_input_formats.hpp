// Readers of the channel-data file formats that carry their own geometry (internal to
// das_input*.cpp): PICMUS's HDF5 layout, USTB's UFF and Verasonics' MAT saves.
#pragma once

#include <filesystem>
#include <memory>
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

/// What a Verasonics save (a MAT file holding the structs Trans, Receive and Resource beside its
/// channel data RcvData{b}) says of its acquisition, for read_channel_data to take where the user
/// gave nothing: the geometry (sampling rate, sound speed, t0, pitch, elements, the transmits of
/// plane waves or synthetic aperture with each one's timing, and notes on what it leaves out),
/// the array's name, and how its rows hold a frame's acquisitions.
struct VerasonicsSave {
  FileGeometry geometry;    ///< layout "(samples,transmits),elements,frames"
  std::string var;          ///< "RcvData{b}", b = Receive(1).bufnum
  int samples = 0;          ///< rows of one acquisition
  int transmits = 0;        ///< acquisitions a frame
  std::string channel_map;  ///< Trans.Connector's channels as --channel-map lists them, else ""
};

/// The save's parameters, or null for a file that is not one (not a .mat, no Trans, Receive and
/// Resource structs, or a file the MAT list cannot read, which its reader refuses). The last
/// file's answer is kept while it is unchanged. Throws Error naming the file and the field for a
/// save whose acquisition usrecon cannot beamform: a curved, 2-D or multiplexed probe, bandpass
/// sampling, acquisitions whose rows are not one after another or are sampled unlike each other.
std::shared_ptr<const VerasonicsSave> verasonics_save(const std::filesystem::path& path);

/// `in` with the save's array, layout, samples and channel map where the user gave none (the
/// layout, samples and map only for the save's own array).
ChannelInput with_verasonics_defaults(const ChannelInput& in, const VerasonicsSave& save);

}  // namespace usrecon::recon::detail
