#!/usr/bin/python3
"""Writes scipy_struct_only.mat: a MAT v5 file (SciPy) whose channel data are kept in a struct,
as some scanners export them: P.rx.data (int16 4 x 3), P.fs, P.name (text) and P.tags (a cell),
and no numeric variable at the top level. read_mat without --var must offer the struct's numeric
fields (IoMat.ChannelDataInAStructAreOffered). Made once with Debian's python3-scipy 1.10; run
from this directory."""
import numpy as np
import scipy.io as sio

cells = np.empty((1, 1), dtype=object)
cells[0, 0] = 'a'
P = {'rx': {'data': np.arange(12, dtype=np.int16).reshape(4, 3)}, 'fs': 20e6, 'name': 'probe', 'tags': cells}
sio.savemat('scipy_struct_only.mat', {'P': P}, oned_as='row')
