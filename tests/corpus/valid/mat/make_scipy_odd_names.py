#!/usr/bin/python3
"""Writes scipy_odd_{names,cells,zero,pair}.mat: MAT v5 files (SciPy) whose variable names take
--var's own syntax, which MATLAB would not allow but SciPy writes: a numeric 'rf(1)' read by its
whole name (--var 'rf(1)', or without --var as the file's only numeric array), and a cell 'q(1)'
whose elements --var cannot name, so they are not offered; 'ok{1}' is; 'rf(0)', no valid
subscript, read by its name; 'rf(1)' beside 'rf', read as itself, not as rf's element
(IoMatIndexingScipy.NamesThatTakeTheSyntaxOfVar). Made once with Debian's python3-scipy 1.10;
run from this directory."""
import warnings

import numpy as np
import scipy.io as sio

def cell(value):
    c = np.empty((1, 1), dtype=object)
    c[0, 0] = value
    return c

with warnings.catch_warnings():
    warnings.simplefilter('ignore')
    sio.savemat('scipy_odd_names.mat', {'rf(1)': np.arange(6.0).reshape(2, 3), 'q(1)': cell(np.array([[1.0, 2.0]]))})
    sio.savemat('scipy_odd_cells.mat', {'q(1)': cell(np.array([[1.0, 2.0]])), 'ok': cell(np.array([[5.0, 6.0]]))})
    sio.savemat('scipy_odd_zero.mat', {'rf(0)': np.arange(6.0).reshape(2, 3)})
    sio.savemat('scipy_odd_pair.mat', {'rf': np.ones((2, 3)), 'rf(1)': np.full((2, 3), 2.0)})
