#!/usr/bin/python3
"""Writes USTB-style UFF files (HDF5) the way USTB's MATLAB writer (+uff/write_object.m, UFF
v1.2.0) lays them out, with h5py instead of MATLAB, and point echoes timed by USTB's own
convention, so that usrecon's UFF reader is checked against a writer and a simulator it does not
share code with (CliDas.UstbUffFiles*). Run once with Debian's python3-h5py 3.7; from this
directory.

The layout, as USTB writes it:
- root attribute `version`; each object a group with attributes class, name, size, array;
- every number a float32 dataset, MATLAB's dims reversed (a scalar is {1, 1}; data
  [samples x channels x waves x frames] is {frames, waves, channels, samples}, with trailing
  singleton MATLAB dims dropped); complex arrays a group with `real` and `imag`;
- strings (`char`) float32 datasets of character codes, cells groups of `<name>_0001`, ...;
- `sequence` a group of `sequence_0001`, ... when there are several waves, the wave itself when
  there is one; a wave's source a uff.point (distance, azimuth, elevation); no `wavefront`
  dataset (MATLAB's writer has no case for that enumeration; a plane wave is distance = Inf).

Timing, as USTB's DAS (+midprocess/das.m) reads it: t = 0 when a wave crosses the origin;
sample k of wave w is at initial_time + k / fs + sequence(w).delay; the echo of point p on
element e arrives at (z cos a + x sin a) / c + |p - e| / c for a plane wave at angle a, and at
(|p - s| + |s|) / c + |p - e| / c for a spherical wave from an element at s (synthetic aperture),
at (|p - s| - |s|) / c + |p - e| / c for one from a virtual source s behind the array (z < 0:
a diverging wave), and at (sign(z_p - z_s) |p - s| + |s|) / c + |p - e| / c for one converging
on a focal point s in front of it (z > 0: a focused wave; das.m's (-1)^(z < z_s)).
IQ data are demodulated on the clock initial_time + k / fs.
"""
import json
import h5py
import numpy as np

C = 1540.0
FS = 20e6
F0 = 5e6


def scalar(group, name, value):
    d = group.create_dataset(name, data=np.array([[value]], dtype=np.float32))
    d.attrs['class'] = np.bytes_('double')
    d.attrs['name'] = np.bytes_(name)
    d.attrs['imaginary'] = np.array([[0.0]])
    d.attrs['complex'] = np.array([[0.0]])


def array(group, name, values):
    # values in MATLAB's order; stored reversed (C order sees MATLAB's first axis fastest).
    values = np.asarray(values, dtype=np.float32)
    while values.ndim > 2 and values.shape[-1] == 1:  # MATLAB drops trailing singleton dims
        values = values[..., 0]
    d = group.create_dataset(name, data=values.T)
    d.attrs['class'] = np.bytes_('double')
    d.attrs['name'] = np.bytes_(name)
    d.attrs['imaginary'] = np.array([[0.0]])
    d.attrs['complex'] = np.array([[0.0]])


def complex_array(group, name, values):
    g = group.create_group(name)
    for part, getter, imaginary in (('real', np.real, 0.0), ('imag', np.imag, 1.0)):
        array(g, part, getter(values))
        g[part].attrs['imaginary'] = np.array([[imaginary]])
    g.attrs['class'] = np.bytes_('double')
    g.attrs['name'] = np.bytes_(name)
    g.attrs['complex'] = np.array([[1.0]])


def text(group, name, value):
    d = group.create_dataset(name, data=np.array([[ord(ch) for ch in value]], dtype=np.float32).T)
    d.attrs['class'] = np.bytes_('char')
    d.attrs['name'] = np.bytes_(name)


def uff_object(group, name, cls, count=1):
    g = group.create_group(name)
    g.attrs['class'] = np.bytes_(cls)
    g.attrs['name'] = np.bytes_(name)
    g.attrs['size'] = np.array([[1.0, float(count)]])
    g.attrs['array'] = np.array([[1.0 if count > 1 else 0.0]])
    return g


def probe(group, n, pitch):
    p = uff_object(group, 'probe', 'uff.linear_array')
    x = (np.arange(n) - (n - 1) / 2) * pitch
    geometry = np.zeros((n, 7))  # MATLAB N x 7: x y z theta phi width height
    geometry[:, 0] = x
    geometry[:, 5] = pitch
    geometry[:, 6] = 10 * pitch
    array(p, 'geometry', geometry)
    scalar(p, 'N', n)
    scalar(p, 'pitch', pitch)
    scalar(p, 'element_width', pitch)
    scalar(p, 'element_height', 10 * pitch)
    return x


def wave(group, name, n, pitch, distance, azimuth, delay, sound_speed=C):
    w = uff_object(group, name, 'uff.wave')
    s = uff_object(w, 'source', 'uff.point')
    scalar(s, 'distance', distance)
    scalar(s, 'azimuth', azimuth)
    scalar(s, 'elevation', 0.0)
    a = uff_object(w, 'apodization', 'uff.apodization')
    scalar(a, 'f_number', 1.0)
    probe(w, n, pitch)  # USTB keeps a copy of the probe in every wave
    scalar(w, 'delay', delay)
    scalar(w, 'sound_speed', sound_speed)


def echoes(x, angles, points, initial_time, delay, samples):
    """[samples][channels][waves] RF: a 5 MHz Gaussian pulse per point, USTB's timing."""
    t = initial_time + np.arange(samples) / FS + delay
    rf = np.zeros((samples, len(x), len(angles)))
    for w, a in enumerate(angles):
        for px, pz in points:
            tau = (pz * np.cos(a) + px * np.sin(a)) / C + np.hypot(px - x, pz) / C  # [channels]
            dt = t[:, None] - tau[None, :]
            rf[:, :, w] += np.exp(-0.5 * (dt * F0 / 0.6) ** 2) * np.cos(2 * np.pi * F0 * dt)
    return rf


def echoes_iq(x, angles, points, initial_time, delay, samples, fs, fd):
    """The same echoes as baseband IQ sampled at fs: the analytic signal demodulated at fd on
    USTB's clock, which reads sample k at initial_time + k / fs (without the wave's delay: its DAS
    rotates each sample by exp(j 2 pi fd tau) with tau = initial_time + k / fs)."""
    clock = initial_time + np.arange(samples) / fs
    t = clock + delay
    iq = np.zeros((samples, len(x), len(angles)), dtype=complex)
    for w, a in enumerate(angles):
        for px, pz in points:
            tau = (pz * np.cos(a) + px * np.sin(a)) / C + np.hypot(px - x, pz) / C
            dt = t[:, None] - tau[None, :]
            iq[:, :, w] += np.exp(-0.5 * (dt * F0 / 0.6) ** 2) * np.exp(2j * np.pi * F0 * dt)
    return iq * np.exp(-2j * np.pi * fd * clock)[:, None, None]


def channel_data_file(path, n, pitch, angles, delay, initial_time, data, modulation=0.0, sources=None,
                      transmit_speed=C, fs=FS):
    with h5py.File(path, 'w') as f:
        f.attrs['version'] = np.bytes_('v1.2.0')
        cd = uff_object(f, 'channel_data', 'uff.channel_data')
        scalar(cd, 'sampling_frequency', fs)
        scalar(cd, 'initial_time', initial_time)
        scalar(cd, 'sound_speed', C)
        scalar(cd, 'modulation_frequency', modulation)
        (complex_array if np.iscomplexobj(data) else array)(cd, 'data', data)
        probe(cd, n, pitch)
        sources = sources or [(np.inf, a) for a in angles]
        if len(sources) == 1:
            wave(cd, 'sequence', n, pitch, sources[0][0], sources[0][1], delay, transmit_speed)
        else:
            seq = uff_object(cd, 'sequence', 'uff.wave', len(sources))
            for k, (distance, azimuth) in enumerate(sources):
                wave(seq, 'sequence_%04d' % (k + 1), n, pitch, distance, azimuth, delay, transmit_speed)
        names = uff_object(cd, 'name', 'cell', 1)
        text(names, 'name_0001', 'usrecon fixture, USTB layout')
        pulse = uff_object(cd, 'pulse', 'uff.pulse')
        scalar(pulse, 'center_frequency', F0)
        # A second object in the file, as PICMUS files hold /scan and /beamformed_data too.
        scan = uff_object(f, 'scan', 'uff.linear_scan')
        array(scan, 'x_axis', np.linspace(-5e-3, 5e-3, 11)[:, None])


N, PITCH = 32, 0.3e-3
x = (np.arange(N) - (N - 1) / 2) * PITCH
points = [(0.0, 10e-3), (2e-3, 15e-3)]
angles = np.deg2rad([-8.0, 0.0, 8.0])
# Plane waves at three angles, one frame: the layout PICMUS's .uff files use.
channel_data_file('ustb_planewave.uff', N, PITCH, angles, 0.5e-6, 1e-6,
                  echoes(x, angles, points, 1e-6, 0.5e-6, 600))
with open('ustb_planewave.truth.json', 'w') as out:
    json.dump({'channel_data': 'ustb_planewave.uff', 'units': 'metres; x from the array centre, z depth',
               'points': [{'x': px, 'z': pz} for px, pz in points]}, out, indent=2)
    out.write('\n')
# One plane wave (the sequence is the wave itself), two frames with the point moved between them.
frames = np.stack([echoes(x, [0.0], [p], 0.0, 0.0, 600) for p in [(-1e-3, 8e-3), (1e-3, 12e-3)]], axis=-1)
channel_data_file('ustb_one_wave_two_frames.uff', N, PITCH, [0.0], 0.0, 0.0, frames)
# The same acquisition as baseband IQ: demodulated at 5 MHz, sampled at 10 MHz (complex).
channel_data_file('ustb_iq.uff', N, PITCH, angles, 0.5e-6, 1e-6,
                  echoes_iq(x, angles, points, 1e-6, 0.5e-6, 300, 10e6, F0), modulation=F0, fs=10e6)
# Synthetic aperture, USTB's STA layout: a spherical wave from each element (source at the
# element: distance |x|, azimuth +-90 deg). USTB's DAS times such a wave as passing the origin at
# t = 0, so the element fires at |x| / c: the echo of p on element e arrives at
# (|p - s| + |s|) / c + |p - e| / c.
x12 = (np.arange(12) - 5.5) * PITCH
sta = np.zeros((340, 12, 12))
t_sta = 1e-6 + np.arange(340) / FS + 0.2e-6
points_sta = [(0.0, 8e-3), (1e-3, 11e-3)]
for n, xs in enumerate(x12):
    for px, pz in points_sta:
        tau = (np.hypot(px - xs, pz) + abs(xs)) / C + np.hypot(px - x12, pz) / C
        dt = t_sta[:, None] - tau[None, :]
        sta[:, :, n] += np.exp(-0.5 * (dt * F0 / 0.6) ** 2) * np.cos(2 * np.pi * F0 * dt)
channel_data_file('ustb_sta.uff', 12, PITCH, None, 0.2e-6, 1e-6, sta,
                  sources=[(abs(xe), np.sign(xe) * np.pi / 2) for xe in x12])
with open('ustb_sta.truth.json', 'w') as out:
    json.dump({'channel_data': 'ustb_sta.uff', 'units': 'metres; x from the array centre, z depth',
               'points': [{'x': px, 'z': pz} for px, pz in points_sta]}, out, indent=2)
    out.write('\n')
# Waves timed with another sound speed than the channel data's: the user must choose one.
x8 = (np.arange(8) - 3.5) * PITCH
channel_data_file('ustb_two_speeds.uff', 8, PITCH, [0.0], 0.0, 0.0, echoes(x8, [0.0], points, 0.0, 0.0, 16),
                  transmit_speed=1500.0)
def virtual_source_file(name, sources, points, delay, transmit_path):
    """Writes name.uff (600 samples, initial_time 1 us, every wave delayed by `delay`) with the
    echoes of `points` for a spherical wave from each of `sources`, transmit_path(p, s) metres
    from the origin crossing (t = 0) to p, and name.truth.json listing the points."""
    t = 1e-6 + np.arange(600) / FS + delay
    data = np.zeros((600, N, len(sources)))
    for w, s in enumerate(sources):
        for p in points:
            tau = transmit_path(p, s) / C + np.hypot(p[0] - x, p[1]) / C
            dt = t[:, None] - tau[None, :]
            data[:, :, w] += np.exp(-0.5 * (dt * F0 / 0.6) ** 2) * np.cos(2 * np.pi * F0 * dt)
    channel_data_file(name + '.uff', N, PITCH, None, delay, 1e-6, data,
                      sources=[(np.hypot(sx, sz), np.arctan2(sx, sz)) for sx, sz in sources])
    with open(name + '.truth.json', 'w') as out:
        json.dump({'channel_data': name + '.uff', 'units': 'metres; x from the array centre, z depth',
                   'points': [{'x': px, 'z': pz} for px, pz in points]}, out, indent=2)
        out.write('\n')


# Diverging waves from three virtual sources 8 mm behind the array (source: distance |s|, azimuth
# atan2(x, z), beyond 90 degrees). USTB's DAS subtracts |s| for a source behind the array: the
# wave leaves s at -|s| / c, so the echo of p on element e arrives at (|p - s| - |s|) / c + |p - e| / c.
virtual_source_file('ustb_dw', [(-3e-3, -8e-3), (0.0, -8e-3), (3e-3, -8e-3)], [(0.0, 10e-3), (-2e-3, 16e-3)],
                    0.3e-6, lambda p, s: np.hypot(p[0] - s[0], p[1] - s[1]) - np.hypot(s[0], s[1]))
# Focused waves: five focal points 12 mm deep (source: distance |s|, azimuth atan2(x, z), within
# 90 degrees). The wave crosses the origin at t = 0 and reaches s at |s| / c; a point above the
# focal depth is reached |p - s| / c before that, one below it |p - s| / c after.
virtual_source_file('ustb_fw', [(k * 1.2e-3, 12e-3) for k in range(-2, 3)], [(0.5e-3, 8e-3), (-1.5e-3, 17e-3)],
                    0.1e-6, lambda p, s: (-1.0 if p[1] < s[1] else 1.0) * np.hypot(p[0] - s[0], p[1] - s[1])
                    + np.hypot(s[0], s[1]))
