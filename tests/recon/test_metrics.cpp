// PICMUS metrics on images whose answers are known.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "usrecon/recon/metrics.hpp"

namespace usrecon::recon {
namespace {

TEST(ReconMetrics, GaussianSpotPositionAndWidths) {
  Grid g = Grid::from_ranges(-2e-3, 2e-3, 0.02e-3, 10e-3, 14e-3, 0.01e-3);
  const double x0 = 0.3e-3, z0 = 12.1e-3, fx = 0.6e-3, fz = 0.4e-3;  // FWHMs
  const double sx = fx / 2.3548200450309493, sz = fz / 2.3548200450309493;
  std::vector<double> env(g.pixels());
  for (int ix = 0; ix < g.nx; ++ix)
    for (int iz = 0; iz < g.nz; ++iz) {
      const double dx = g.x(ix) - x0, dz = g.z(iz) - z0;
      env[std::size_t(ix) * g.nz + iz] = std::exp(-dx * dx / (2 * sx * sx) - dz * dz / (2 * sz * sz));
    }
  const PointMetrics m = measure_point(env, g, 0.25e-3, 12.0e-3, 0.5e-3);
  EXPECT_NEAR(m.x, x0, 1e-9);
  EXPECT_NEAR(m.z, z0, 1e-9);
  EXPECT_NEAR(m.error, std::hypot(0.05e-3, 0.1e-3), 1e-9);
  EXPECT_NEAR(m.fwhm_lateral, fx, 0.01 * fx);
  EXPECT_NEAR(m.fwhm_axial, fz, 0.01 * fz);
}

TEST(ReconMetrics, FwhmOfAProfileThatNeverFallsIsUndefined) {
  const std::vector<double> flat = {1, 1, 1, 1};
  EXPECT_TRUE(std::isnan(fwhm_samples(flat, 1)));
  const std::vector<double> tri = {0, 0.25, 0.5, 1, 0.5, 0.25, 0};
  EXPECT_NEAR(fwhm_samples(tri, 3), 2.0, 0.05);
}

TEST(ReconMetrics, CystContrastAndGcnr) {
  Grid g = Grid::from_ranges(-5e-3, 5e-3, 0.05e-3, 15e-3, 25e-3, 0.05e-3);
  std::mt19937 rng(3);
  std::normal_distribution<double> n(0, 1);
  std::vector<double> env(g.pixels());
  for (int ix = 0; ix < g.nx; ++ix)
    for (int iz = 0; iz < g.nz; ++iz) {
      const bool inside = std::hypot(g.x(ix), g.z(iz) - 20e-3) < 2e-3;
      // Rayleigh speckle, 20 dB darker inside.
      env[std::size_t(ix) * g.nz + iz] = (inside ? 0.1 : 1.0) * std::hypot(n(rng), n(rng));
    }
  const CystMetrics m = measure_cyst(env, g, 0, 20e-3, 2e-3);
  EXPECT_NEAR(m.contrast_db, -20, 1.0);
  EXPECT_GT(m.gcnr, 0.85);
  // Rayleigh speckle in dB has a standard deviation of 5.57 dB: CNR = 20 / 5.57 = 3.6.
  EXPECT_NEAR(m.cnr, 20 / 5.57, 0.4);
  EXPECT_NEAR(m.cnr_db, 20 * std::log10(m.cnr), 1e-9);
  // Identical statistics: no contrast, gCNR near 0 (only histogram noise of ~10^4 samples).
  for (double& v : env) v = std::hypot(n(rng), n(rng));
  EXPECT_LT(measure_cyst(env, g, 0, 20e-3, 2e-3).gcnr, 0.2);
}

}  // namespace
}  // namespace usrecon::recon
