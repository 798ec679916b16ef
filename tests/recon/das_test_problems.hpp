// Small general-DAS problems and their simulated data, shared by the DAS test files.
#pragma once

#include <numbers>

#include "usrecon/recon/das.hpp"
#include "usrecon/recon/das_simulate.hpp"

namespace usrecon::recon::test {

/// 32 elements, three transmits of the model, 800 samples, a grid of 80 x 307 pixels whose edges
/// are off round numbers.
inline DasProblem small_problem(Model model) {
  DasProblem p;
  p.acquisition.model = model;
  p.acquisition.probe = {32, 0.3e-3};
  p.acquisition.fs = 20e6;
  p.acquisition.t0 = 1e-6;
  if (model == Model::PlaneWave)
    for (double deg : {-6.0, 0.0, 4.0}) p.acquisition.angles.push_back(deg * std::numbers::pi / 180);
  if (model == Model::DivergingWave) {  // three virtual sources behind the array, one off to the side
    p.acquisition.source_x = {-3e-3, 0.0, 6e-3};
    p.acquisition.source_z = {-5e-3, -8e-3, -4e-3};
  }
  if (model == Model::FocusedWave) {  // three focal points, their depths between grid rows (where
    // float and double could disagree about which side of the focus a pixel lies)
    p.acquisition.source_x = {-2e-3, 0.5e-3, 3e-3};
    p.acquisition.source_z = {12.0317e-3, 15.0411e-3, 9.9733e-3};
  }
  p.samples = 800;
  // Off round numbers, so that no pixel sits exactly on an aperture edge (where float and double
  // may legitimately disagree about a rect window).
  p.grid = Grid::from_ranges(-4.0123e-3, 4e-3, 0.1013e-3, 3.0071e-3, 25e-3, 0.0717e-3);
  p.options.fnumber = 1.5;
  return p;
}

/// Two points in speckle, simulated for p's acquisition, as analytic signal (simulated as such:
/// no FFT, so the CUDA tests also build where OpenCV is missing, as in tools/gpu-check.sh's
/// nvcc-only build).
inline AnalyticData simulated(const DasProblem& p) {
  DasSimulationOptions o;
  o.acquisition = p.acquisition;
  o.samples = p.samples;
  o.points = {{0.0, 10e-3, 1.0}, {2e-3, 18e-3, 1.0}};
  o.speckle = 300;
  return simulate_das_analytic(o);
}

/// small_problem(model) with the beamforming options of a test case.
inline DasProblem configured_problem(Model model, das::TimeZero time_zero, Window window, Interp interp,
                                     double fnumber, TxApodization tx_apodization, double tx_fnumber) {
  DasProblem p = small_problem(model);
  p.acquisition.time_zero = time_zero;
  p.options.window = window;
  p.options.interp = interp;
  p.options.fnumber = fnumber;
  p.options.tx_apodization = tx_apodization;
  p.options.tx_fnumber = tx_fnumber;
  return p;
}

}  // namespace usrecon::recon::test
