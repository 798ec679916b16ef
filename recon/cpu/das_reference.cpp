// The plain DAS reference loop: double precision, straight from the delay functions. The
// apodizations alone are decided in float, from the float geometry every backend uses: on a grid
// through an aperture's edge (x on the elements, steps of pitch / 2) a pixel lies exactly on it,
// where double and float may disagree about a whole element's (or transmit's) weight.
#include <cmath>

#include "usrecon/recon/das.hpp"
#include "usrecon/recon/delay/virtual_source.hpp"
#include "usrecon/recon/delay/planewave.hpp"
#include "usrecon/recon/delay/synthetic_aperture.hpp"

namespace usrecon::recon {

Image das_reference(const AnalyticData& d, const DasProblem& p) {
  p.validate();
  const Acquisition& acq = p.acquisition;
  acq.validate(d.transmits);
  if (d.samples != p.samples || d.elements != acq.probe.elements)
    throw Error("DAS reference: data and problem sizes differ");
  const std::vector<double> ex = acq.probe.positions();
  const double inv_c_fs = acq.fs / acq.sound_speed, t0_fs = acq.t0 * acq.fs;
  const int window = static_cast<int>(p.options.window);
  std::vector<double> r0;  // diverging and focused waves: each source's reference distance
  for (std::size_t t = 0; t < acq.source_x.size(); ++t)
    r0.push_back(das::virtual_source_reference_distance(acq.source_x[t], acq.source_z[t], ex, acq.time_zero));
  Image image;
  image.grid = p.grid;
  image.data.resize(p.grid.pixels());
  const bool scanline = p.options.tx_apodization == TxApodization::Scanline;
  const std::vector<double> waists = das::virtual_source_waists(acq.source_x, acq.probe.pitch);
  for (int ix = 0; ix < p.grid.nx; ++ix) {
    const double x = p.grid.x(ix);
    // Scanline: only the transmit focused nearest to this column (found here on its own, not
    // from DasProblem::column_transmits, which the fast backends use).
    int line = 0;
    for (int t = 1; scanline && t < acq.transmits(); ++t)
      if (std::fabs(x - acq.source_x[t]) < std::fabs(x - acq.source_x[line])) line = t;
    for (int iz = 0; iz < p.grid.nz; ++iz) {
      const double z = p.grid.z(iz);
      const float xf = static_cast<float>(x), zf = static_cast<float>(z);
      const float alpha = static_cast<float>(p.options.tukey_alpha);
      double si = 0, sq = 0;
      for (int t = 0; t < acq.transmits(); ++t) {
        if (scanline && t != line) continue;
        const double tx_weight =
            has_virtual_sources(acq.model)
                ? das::virtual_source_apodization(xf, zf, static_cast<float>(acq.source_x[t]),
                                                  static_cast<float>(acq.source_z[t]),
                                                  static_cast<float>(p.options.tx_fnumber),
                                                  static_cast<float>(waists[t]), window, alpha)
                : 1.0;
        if (tx_weight == 0.0) continue;
        for (int e = 0; e < acq.probe.elements; ++e) {
          double w = das::receive_apodization(xf, zf, static_cast<float>(ex[e]),
                                              static_cast<float>(p.options.fnumber), window, alpha);
          if (w == 0.0) continue;
          w *= tx_weight;
          double s;
          if (acq.model == Model::PlaneWave) {
            const double a = acq.angles[t];
            s = das::planewave_sample(x, z, ex[e], std::cos(a), std::sin(a),
                                      das::planewave_x_reference(a, ex.front(), ex.back(), acq.time_zero), inv_c_fs,
                                      t0_fs);
          } else if (has_virtual_sources(acq.model)) {
            s = das::virtual_source_sample(x, z, acq.source_x[t], acq.source_z[t], r0[t], ex[e], inv_c_fs, t0_fs);
          } else {
            const int te = acq.tx_elements.empty() ? t : acq.tx_elements[t];
            s = das::synthetic_aperture_sample(x, z, ex[te], ex[e], inv_c_fs, t0_fs);
          }
          const float* I = d.i_channel(t, e);
          const float* Q = d.q_channel(t, e);
          if (p.options.interp == Interp::Linear) {
            si += w * das::interp_linear(I, d.samples, s);
            sq += w * das::interp_linear(Q, d.samples, s);
          } else {
            si += w * das::interp_nearest(I, d.samples, s);
            sq += w * das::interp_nearest(Q, d.samples, s);
          }
        }
      }
      image.data[std::size_t(ix) * p.grid.nz + iz] = {static_cast<float>(si), static_cast<float>(sq)};
    }
  }
  return image;
}

}  // namespace usrecon::recon
