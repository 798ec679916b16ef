#!/usr/bin/python3
"""Writes scipy_mixed_{plain,zlib}.mat: MAT v5 files from an independent writer (SciPy), holding
every kind of variable a scanner's export may carry next to its channel data (an int16 3-D array,
a nested struct, a cell with an empty element, a struct array, a sparse matrix, a complex vector,
char arrays, an empty matrix), uncompressed and zlib-compressed. The MAT size check in
io/src/mat.cpp must accept both (IoMat.AcceptsEveryKindOfVariableFromAnIndependentWriter); they
also seed the MAT fuzzer. Made once with Debian's python3-scipy 1.10; run from this directory."""
import numpy as np
import scipy.io as sio
import scipy.sparse as sp

rf = np.arange(2 * 3 * 4, dtype=np.int16).reshape(2, 3, 4) - 7
params = {'fs': 20e6, 'pitch': 0.298e-3, 'name': 'L11-4v', 'angles': np.array([-1.5, 0, 1.5]),
          'nested': {'depth': np.array([[1.0, 2.0]]), 'flag': True}}
cells = np.empty((1, 4), dtype=object)
cells[0, 0] = np.array([[1.0, 2.0, 3.0]])
cells[0, 1] = 'text'
cells[0, 2] = np.zeros((0, 0))
cells[0, 3] = np.array([[True, False]])
variables = {'rf': rf, 'params': params, 'cells': cells,
             'sparse_m': sp.csc_matrix(np.array([[0, 1.5], [2.5, 0]])),
             'complex_v': np.array([1 + 2j, 3 - 4j]), 'label': 'channel data',
             'empty': np.zeros((0, 3)),
             'structarr': np.array([(1.0, 'a'), (2.0, 'bb')], dtype=[('x', 'O'), ('y', 'O')]).reshape(1, 2)}
for compress in (False, True):
    sio.savemat(f'scipy_mixed_{"zlib" if compress else "plain"}.mat', variables,
                do_compression=compress, oned_as='row')
