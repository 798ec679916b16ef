// Image-quality metrics with PICMUS's formulas (Liebgott et al., IEEE IUS 2016): for point
// targets, the position of the maximum and its distance from the truth, and the axial and lateral
// full widths at half maximum (-6 dB) on the dB profiles through the maximum, linearly
// interpolated (PICMUS: interp1 at 10x); for cysts, the contrast-to-noise ratio on the dB image
// and the generalized CNR (gCNR, Rodriguez-Molares et al. 2020) from histograms of the dB image.
// The regions are not PICMUS's code's (README): a width runs from the peak to the first -6 dB
// crossing on each side (PICMUS spans the outermost samples above -6 dB, side lobes included), the
// search region is a circle, and a cyst is 0.8 R inside against 1.25-1.6 R around.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "usrecon/recon/geometry.hpp"

namespace usrecon::recon {

/// Envelope |image|, lateral-major like the image.
std::vector<double> envelope(const Image& image);

struct PointMetrics {
  double true_x = 0, true_z = 0;  ///< metres
  double x = 0, z = 0;            ///< position of the maximum within the search radius
  double error = 0;               ///< distance of the maximum from the truth
  double fwhm_axial = 0, fwhm_lateral = 0;  ///< -6 dB widths, metres (NaN when not closed)
  double peak = 0;                ///< envelope at the maximum
  /// The maximum lies on the search region's edge (the disk's or the image's): it may be the
  /// flank of something outside the region rather than the target.
  bool at_region_edge = false;
  /// The width spans fewer than kFinestWidthSteps grid steps (dz, dx): the grid, not the image,
  /// decides it. Still given; flagged.
  bool fwhm_axial_coarse = false, fwhm_lateral_coarse = false;
};

/// The narrowest -6 dB width, in grid steps, that the sampled profile measures well. A Gaussian
/// spot's width taken from its samples (linear interpolation of the dB profile) is within 7 % of
/// the truth from 2 steps on, and up to 25 % off at 1.5 steps, 50 % at 1, by where the spot falls
/// between samples (ReconMetrics.WidthsUnderTwoStepsAreFlagged measures it).
inline constexpr double kFinestWidthSteps = 2.0;

/// Finds the envelope maximum within `search_radius` of (x, z) and measures its -6 dB widths
/// along depth and across. env[ix * nz + iz] on `grid`; pixels of envelope 0, NaN or infinity
/// hold no data and are never the maximum. Throws Error when the search region holds no pixel or
/// no echo (no data throughout), or the point, the radius (> 0) or the grid is not finite.
PointMetrics measure_point(std::span<const double> env, const Grid& grid, double x, double z,
                           double search_radius);

/// -6 dB width of a profile around sample `peak` (linear interpolation of the dB profile),
/// in units of the sample step; NaN if the profile never falls 6 dB on one side.
double fwhm_samples(std::span<const double> profile, int peak);

struct CystMetrics {
  double x = 0, z = 0, radius = 0;
  double cnr_db = 0;  ///< 20 log10(|mu_in - mu_out| / sqrt((var_in + var_out) / 2)), on dB values
  double cnr = 0;     ///< the same ratio, linear
  double contrast_db = 0;  ///< mean dB inside minus mean dB outside
  double gcnr = 0;    ///< 1 - overlap of the inside and background histograms (256 bins, dB)
  std::size_t inside_pixels = 0, background_pixels = 0;  ///< pixels measured (with data)
  std::size_t inside_no_data = 0, background_no_data = 0;  ///< pixels without data (0, NaN, inf), left out
  bool cut_by_image_edge = false;  ///< the background ring reaches past the image: measured on what is in it
};

/// Inside: the disk of radius inner * radius; background: the ring between 1.25 and 1.6 radius
/// (PICMUS-style regions that keep clear of the cyst's edge). Variances are sample variances
/// (n - 1). Pixels without data (envelope 0, NaN or infinite) are left out and counted; throws
/// Error when either region keeps fewer than 2 pixels or neither has any spread of levels.
CystMetrics measure_cyst(std::span<const double> env, const Grid& grid, double x, double z,
                         double radius, double inner = 0.8);

nlohmann::json to_json(const PointMetrics& m);
nlohmann::json to_json(const CystMetrics& m);

}  // namespace usrecon::recon
